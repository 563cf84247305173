"""The CMake arguments that build llama-cpp-python for the CPU this runs on, without ``-march=native``.

``python scripts/llama_cmake_args.py`` prints the arguments on one line (the Makefile passes them as
``CMAKE_ARGS``); ``--describe`` prints instead the one line saying which build was chosen and why.

The build is never native: a native build turns on every instruction set the CPU reports, AMX included, and
on virtualized Intel CPUs with AMX llama.cpp's worker threads die with a general protection fault on the first
forward pass (see the Makefile). Here each instruction set is named explicitly from the CPU's flags
(``/proc/cpuinfo``):

- ``avx512``: AVX-512 F / CD / VL / DQ / BW all reported, plus VNNI, VBMI and BF16 where reported;
- ``avx2``: AVX, AVX2, FMA and F16C reported (every x86-64 CPU of the last decade);
- ``baseline``: neither; only what the CPU reports of SSE 4.2 and BMI2.

Without ``/proc/cpuinfo`` (not Linux) the ``avx2`` build is chosen, as the Makefile built everywhere before.

AMX is always off, whatever the CPU reports. AVX-VNNI and BMI2 follow their own flags in every build.
The multimodal library (``LLAVA_BUILD``) is never built: the server loads it only for image chat formats.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: cpuinfo flags every AVX-512 kernel of ggml needs (its GGML_AVX512 switch compiles with all five).
AVX512_BASE = ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")
AVX2_BASE = ("avx", "avx2", "fma", "f16c")
#: ggml switch -> the cpuinfo flag that allows it, for the optional extensions of each build.
AVX512_EXTRAS = {"GGML_AVX512_VNNI": "avx512_vnni", "GGML_AVX512_VBMI": "avx512vbmi", "GGML_AVX512_BF16": "avx512_bf16"}
ALWAYS_FOLLOWED = {"GGML_SSE42": "sse4_2", "GGML_BMI2": "bmi2", "GGML_AVX_VNNI": "avx_vnni"}
AMX_SWITCHES = ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16")
#: not CPU-dependent: what the server does not need is not compiled
FIXED = ("-DGGML_NATIVE=OFF", "-DLLAVA_BUILD=OFF")
PROC_CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class LlamaBuild:
    """The chosen build: its ``name`` (avx512 / avx2 / baseline), the switches set on, and the CMake arguments."""

    name: str
    enabled: tuple[str, ...]
    args: tuple[str, ...]

    def describe(self) -> str:
        """One line: which build, with which instruction sets, and that AMX is off."""
        sets = ", ".join(s.removeprefix("GGML_") for s in self.enabled) or "none beyond x86-64"
        return f"llama.cpp build: {self.name} ({sets}; AMX off, not native)"


def cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The flags of the first processor in a ``/proc/cpuinfo`` text (empty when it has no ``flags`` line)."""
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


LEVELS = ("baseline", "avx2", "avx512")


def choose_build(flags: Iterable[str], highest: str = "avx512") -> LlamaBuild:
    """The build for a CPU reporting ``flags``, at most ``highest`` (one of :data:`LEVELS`; pure: no file, no
    environment)."""
    have = set(flags)
    switches: dict[str, bool] = {s: have.issuperset([f]) for s, f in ALWAYS_FOLLOWED.items()}
    avx2 = have.issuperset(AVX2_BASE) and LEVELS.index(highest) >= 1
    avx512 = avx2 and have.issuperset(AVX512_BASE) and LEVELS.index(highest) >= 2
    for s in ("GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C"):
        switches[s] = avx2
    switches["GGML_AVX512"] = avx512
    for s, f in AVX512_EXTRAS.items():
        switches[s] = avx512 and f in have
    for s in AMX_SWITCHES:
        switches[s] = False
    name = "avx512" if avx512 else "avx2" if avx2 else "baseline"
    order = (*ALWAYS_FOLLOWED, "GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_AVX512", *AVX512_EXTRAS)
    enabled = tuple(s for s in order if switches[s])
    args = FIXED + tuple(f"-D{s}={'ON' if switches[s] else 'OFF'}" for s in (*order, *AMX_SWITCHES))
    return LlamaBuild(name, enabled, args)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cpuinfo", type=Path, default=None, help="a cpuinfo file to read (default: /proc/cpuinfo)")
    p.add_argument("--describe", action="store_true", help="print which build is chosen, not the arguments")
    p.add_argument("--max", choices=LEVELS, default="avx512", help="the highest build to choose (default avx512)")
    args = p.parse_args(argv)
    path = args.cpuinfo or PROC_CPUINFO
    try:
        flags = cpu_flags(path.read_text())
    except OSError as exc:
        if args.cpuinfo is not None:
            print(f"error: cannot read {path} ({exc.strerror}); pass a readable --cpuinfo FILE", file=sys.stderr)
            return 2
        flags = frozenset(AVX2_BASE)  # no /proc (not Linux): the build every x86-64 CPU of the last decade runs
    build = choose_build(flags, args.max)
    print(build.describe() if args.describe else " ".join(build.args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
