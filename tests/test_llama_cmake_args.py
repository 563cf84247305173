"""The llama.cpp build chosen from a CPU's flags (scripts/llama_cmake_args.py), on fake cpuinfo texts."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.llama_cmake_args import choose_build, cpu_flags, main

AVX2_CPU = "fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi1 bmi2"
#: an Intel CPU of the kind where the native build crashed: AVX-512, VNNI and AMX
AMX_CPU = AVX2_CPU + " avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni avx512vbmi avx512_bf16 avx_vnni"
AMX_CPU += " amx_tile amx_int8 amx_bf16"


def cpuinfo(flags: str, processors: int = 2) -> str:
    block = "processor\t: {i}\nvendor_id\t: GenuineIntel\nmodel name\t: Fake CPU\nflags\t\t: {flags}\n\n"
    return "".join(block.format(i=i, flags=flags) for i in range(processors))


def switch(args: tuple[str, ...], name: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in args if a.startswith(f"-D{name}=")]
    return value


def test_cpu_flags_reads_the_first_processor() -> None:
    assert cpu_flags(cpuinfo("avx avx2 fma")) == {"avx", "avx2", "fma"}
    assert cpu_flags("processor : 0\nFeatures : neon asimd\n") == frozenset()


def test_avx512_cpu_gets_avx512_and_vnni_and_never_amx() -> None:
    build = choose_build(cpu_flags(cpuinfo(AMX_CPU)))
    assert build.name == "avx512"
    for on in ("GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_AVX512", "GGML_AVX512_VNNI", "GGML_AVX512_BF16"):
        assert switch(build.args, on) == "ON", on
    for off in ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16", "GGML_NATIVE"):
        assert switch(build.args, off) == "OFF", off
    assert "AMX off" in build.describe() and "AVX512_VNNI" in build.describe()


def test_avx512_without_vnni_keeps_vnni_off() -> None:
    flags = AVX2_CPU + " avx512f avx512dq avx512cd avx512bw avx512vl"
    build = choose_build(cpu_flags(cpuinfo(flags)))
    assert build.name == "avx512"
    assert switch(build.args, "GGML_AVX512_VNNI") == "OFF"
    assert switch(build.args, "GGML_AVX_VNNI") == "OFF"


def test_partial_avx512_falls_back_to_avx2() -> None:
    """ggml's AVX-512 switch compiles with F, CD, VL, DQ and BW together: one missing is the AVX2 build."""
    build = choose_build(cpu_flags(cpuinfo(AVX2_CPU + " avx512f avx512cd avx512vl avx512dq avx512_vnni")))
    assert build.name == "avx2"
    assert switch(build.args, "GGML_AVX512") == "OFF"
    assert switch(build.args, "GGML_AVX512_VNNI") == "OFF"


def test_avx2_cpu_gets_the_portable_build() -> None:
    build = choose_build(cpu_flags(cpuinfo(AVX2_CPU)))
    assert build.name == "avx2"
    assert build.enabled == ("GGML_SSE42", "GGML_BMI2", "GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C")
    assert switch(build.args, "GGML_AVX512") == "OFF"


def test_old_cpu_gets_no_avx() -> None:
    build = choose_build(cpu_flags(cpuinfo("fpu sse sse2 ssse3 sse4_1 sse4_2")))
    assert build.name == "baseline"
    assert switch(build.args, "GGML_AVX") == "OFF" and switch(build.args, "GGML_SSE42") == "ON"
    assert switch(build.args, "GGML_BMI2") == "OFF"


def test_a_cap_keeps_an_avx512_cpu_on_avx2() -> None:
    build = choose_build(cpu_flags(cpuinfo(AMX_CPU)), highest="avx2")
    assert build.name == "avx2" and switch(build.args, "GGML_AVX512") == "OFF"
    assert switch(build.args, "GGML_AVX2") == "ON"


def test_every_build_skips_the_multimodal_library() -> None:
    for flags in (AVX2_CPU, AMX_CPU, ""):
        assert "-DLLAVA_BUILD=OFF" in choose_build(flags.split()).args


def test_main_prints_args_or_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake = tmp_path / "cpuinfo"
    fake.write_text(cpuinfo(AMX_CPU))
    assert main(["--cpuinfo", str(fake)]) == 0
    assert "-DGGML_AVX512=ON" in capsys.readouterr().out.split()
    assert main(["--cpuinfo", str(fake), "--describe"]) == 0
    assert capsys.readouterr().out.startswith("llama.cpp build: avx512 (")


def test_main_unreadable_cpuinfo_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--cpuinfo", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot read")
