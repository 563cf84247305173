"""The published answer files this project knows: where each comes from (repository, pinned commit, path), its
sha256, its layout and what its source states about the run. ``scripts/get_published.py`` fetches them; the
importer names a known file's source from its sha256."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memcore.datasets.errors import DataError
from memcore.registry import Registry


@dataclass(frozen=True)
class PinnedFile:
    """One file: ``local`` its path under the published data dir, ``repo_path`` its path in the repository at the
    source's commit, ``sha256`` its content's digest."""

    local: str
    repo_path: str
    sha256: str


@dataclass(frozen=True)
class PublishedSource:
    """A published run: ``name`` (what ``get_published.py`` and the import take), the importer's ``layout``, the
    ``system`` as the tables name it, the ``answer_model`` and ``judge`` its source states, the GitHub ``repo`` and
    ``commit`` its files are pinned at, its ``licence`` and its ``files``."""

    name: str
    layout: str
    system: str
    answer_model: str
    judge: str
    repo: str
    commit: str
    licence: str
    files: tuple[PinnedFile, ...]
    answer_prompt: str = ""
    note: str = ""

    @property
    def source(self) -> str:
        return f"{self.repo} @ {self.commit}"

    def raw_url(self, file: PinnedFile) -> str:
        """The file's raw GitHub URL at the pinned commit."""
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{file.repo_path}"


_ZEP = ("getzep/zep-papers", "4b7f26cc76cca20743314ba9acb8c2cb6adc42f6", "CC BY-NC-SA 4.0")
_AUDIT = ("dial481/locomo-audit", "9493fb4b4af4256ed17a18e8fd0b3cfdeec29539", "CC BY-NC 4.0")
_MEMOBASE = ("memodb-io/memobase", "358c16bbc6d687937d79bc2f984a11c3be8da901", "Apache-2.0")
_MEMOBASE_0709 = ("memodb-io/memobase", "7991dd5a44f10a8e3fb9e057eb3780e108fbac2e", "Apache-2.0")
_MEM0_PR = ("mem0ai/mem0", "81a0fba52c6262852e4caa9e4b1c7cd95c2890d9", "Apache-2.0")
_BACKBOARD = ("Backboard-io/Backboard-Locomo-Benchmark", "164d45c06f860d832bbe598f0dde0ea66b05f384", "none stated")
_MEMOBASE_DIR = "docs/experiments/locomo-benchmark/fixture/memobase"

_BACKBOARD_SHA = (
    "37bb7859491caa56722ef091a508f63953a335543b441c7c02a17773a49d40d7",
    "0ac9d86ea03f7876b364320a5bfac2dcc9ac9459c7e2a743d5c302d40813b866",
    "b1317355bfbab78dd5f0e2b4115d033aecc306d5a947a05d7b62a368786a4b0b",
    "93ec286cb45d1724103996d4f2b1a0a6bb789e1a41b74d7c5db7330b72157933",
    "6025c1269cc27b68fe7e54505911bf1589b46d82a72707302bd26c3a33763916",
    "4172a332b5b3232e595676e123ea0d25c647a18635cdca00bfa1d3c896e8b5c8",
    "22d4289de11a6f6913c9a8ad8fbed471085f96d7768648668cbb8743dcdace1a",
    "45906ec131dc41fb21f3db85d0608623845dfe222226b58529c1ed66ebe59184",
    "c83018022f3df406ba0f083b61823788987ee5c354bd70930ea9f47161a73940",
    "8a2a792d3aa6171fb14010761d964201262dbd220b35a439b334bc51b1c30673",
)

#: Memobase's runs by date: (repository @ commit, sha256, what the run was).
_MEMOBASE_RUNS = {
    "0710": (
        _MEMOBASE,
        "171489e7a60dd6275027a9897270ad5a9bce83193c2b64863ecd43eba9582b5a",
        "v0.0.37, 3,000-token context",
    ),
    "0503": (
        _MEMOBASE,
        "3e5623255997b7d42297f1e1d687295e6e8ecc745338fed5e09697bad5400ee5",
        "v0.0.32, 3,000-token context",
    ),
    "0709": (
        _MEMOBASE_0709,
        "377db2ac3f9e7e113a842837dec70e3d077f37772e4e8f0ec4212b16db34da37",
        "partial run, no conversation 0; superseded by 0710",
    ),
}

_FULL_CONTEXT = {
    "gpt-4o-mini-cot": "08212320401c65fa9a97f78dd18adfb1d527137ec9f04b1b518420aa8e651bfe",
    "gpt-4.1-mini-cot": "7fa10ba1d8976bdc215172f9d4e1840c015644b28e8e97de840b690051e354f3",
    "gpt-4o-mini-memos": "1c55eb0ee66f9eb784c222ec54492cc39702652baa4e6c66b7fb89a7bb8a3d8f",
    "gpt-4.1-mini-memos": "f573c091606b5c7691d7801ef30aada0bc8c54e406e31da3a2f807ab1ffa02e8",
}


def _source(name: str, repo: tuple[str, str, str], files: tuple[PinnedFile, ...], **kw: str) -> PublishedSource:
    return PublishedSource(name=name, repo=repo[0], commit=repo[1], licence=repo[2], files=files, **kw)


def _sources() -> list[PublishedSource]:
    out = [
        _source(
            "zep",
            _ZEP,
            (
                PinnedFile(
                    "zep/zep_locomo_grades.json",
                    "kg_architecture_agent_memory/locomo_eval/data/zep_locomo_grades.json",
                    "2ecb701017bb007306e88abd1af88a9cddac06098e6a7f666e4640aadce23fc6",
                ),
            ),
            layout="zep",
            system="zep",
            answer_model="gpt-4o-mini",
            judge="gpt-4o-mini (Zep's grader)",
            answer_prompt="Zep's answer prompt (20 nodes + 20 edges of graph memory)",
        ),
        _source(
            "mem0-pr3509",
            _MEM0_PR,
            (
                PinnedFile(
                    "mem0-oss-qwen3-14b-pr3509/results.json",
                    "evaluation/results/locomo/exp_data_0-10_2000/results.json",
                    "8e9b028d8223499dc8407a281a7816c1f100d78e821eabef2f16e4077700805d",
                ),
            ),
            layout="mem0-pr",
            system="mem0-oss (PR 3509)",
            answer_model="Qwen3-14B",
            judge="Qwen3-14B (Mem0's ACCURACY_PROMPT)",
            answer_prompt="Mem0's evaluation prompt (third party, unmerged pull request; bge-m3, top-30)",
        ),
        _source(
            "backboard",
            _BACKBOARD,
            tuple(
                PinnedFile(f"backboard/locomo_conversation_{k}.json", f"locomo_conversation_{k}.json", sha)
                for k, sha in enumerate(_BACKBOARD_SHA, 1)
            ),
            layout="backboard",
            system="backboard",
            answer_model="gemini-2.5-pro",
            judge="gpt-4.1 (per its code; a comment says gpt-4o-mini)",
            note="answer model and judge as its code sets them",
            answer_prompt="Backboard's",
        ),
    ]
    for date, (repo, sha, what) in _MEMOBASE_RUNS.items():
        out.append(
            _source(
                f"memobase-{date}",
                repo,
                (
                    PinnedFile(
                        f"memobase/memobase_eval_{date}_3000.json",
                        f"{_MEMOBASE_DIR}/memobase_eval_{date}_3000.json",
                        sha,
                    ),
                ),
                layout="memobase",
                system=f"memobase-{date}",
                answer_model="gpt-4o",
                note="answer model: the source's default, set by an environment variable",
                judge="gpt-4o-mini (Mem0's ACCURACY_PROMPT)",
                answer_prompt=f"Memobase's ({what})",
            )
        )
    for run, sha in _FULL_CONTEXT.items():
        model, prompt = run.rsplit("-", 1)
        out.append(
            _source(
                f"full-context-{run}",
                _AUDIT,
                (
                    PinnedFile(
                        f"full-context-dial481/{run}.eval_results.json",
                        f"fc-baseline/results/{run}/eval_results.json",
                        sha,
                    ),
                ),
                layout="dial481",
                system=f"full-context ({prompt})",
                answer_model=model,
                judge="gpt-4o-mini ×3",
                answer_prompt="chain of thought (answer_prompt_cot)"
                if prompt == "cot"
                else "MemOS's short-answer prompt",
            )
        )
    return out


def _load(registry: Registry[PublishedSource]) -> None:
    for src in _sources():
        registry.add(src.name, src)


SOURCES: Registry[PublishedSource] = Registry("published file", loader=_load)


def source_of_sha256(sha256: str) -> tuple[PublishedSource, PinnedFile] | None:
    """The known source and file whose content has ``sha256``, or None."""
    for name in SOURCES.names():
        src = SOURCES.get(name)
        for f in src.files:
            if f.sha256 == sha256:
                return src, f
    return None


def fetch_source(
    src: PublishedSource, dest_dir: Path, *, from_dir: Path | None = None, force: bool = False
) -> list[Path]:
    """Fetch every file of ``src`` into ``dest_dir`` (under its ``local`` path) from its raw GitHub URL at the pinned
    commit, or from ``from_dir`` (a local copy laid out like the published data dir), each checked against its
    sha256 and written atomically (a verified copy already there is kept unless ``force``). A network failure or a
    wrong sha256 is a :class:`DataError`; nothing unverified is left behind."""
    from memcore.datasets.locomo.download import download_locomo  # the same verified, atomic download

    out = []
    for f in src.files:
        url = (Path(from_dir) / f.local).resolve().as_uri() if from_dir is not None else src.raw_url(f)
        try:
            out.append(download_locomo(Path(dest_dir) / f.local, url=url, expected_sha256=f.sha256, force=force))
        except DataError as exc:
            raise DataError(
                exc.problem, path=exc.path, hint=f"Check the network, or fetch {src.raw_url(f)} by hand."
            ) from None
    return out
