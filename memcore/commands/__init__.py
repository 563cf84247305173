"""The package's console commands, one module each: this table names every command with its entry point
(``pyproject.toml``'s ``[project.scripts]`` lists the same, checked by a test). What the commands share (the
errors that are the user's to fix, the HTTP-log policy, the closing line that leads to ``memcore-view``) is in
:mod:`memcore.commands.shared`. Nothing of the harness imports this package: commands stand above what they run.
"""

#: Console command → ``"module:function"``.
COMMANDS: dict[str, str] = {
    "memcore-run": "memcore.commands.run:run_main",
    "memcore-report": "memcore.commands.report:main",
    "memcore-judge-probe": "memcore.commands.judge_probe:main",
    "memcore-rescore": "memcore.commands.rescore:main",
    "memcore-cache": "memcore.commands.cache:main",
    "memcore-archive": "memcore.commands.archive:main",
    "memcore-simulate": "memcore.commands.simulate:main",
    "memcore-view": "memcore.commands.view:main",
    "memcore-import": "memcore.commands.import_:main",
}
