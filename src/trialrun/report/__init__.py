"""What a run produced, kept and read back: the results model (`results`), the files that hold it (the run's
`journal`, the results `store`, each trial's exchanges sidecar `exchanges`, the eval skill's result files
`_skill_results`), and what is worked out from it (`metrics`, `_stats`, `compare`, `_trajdiff`, `_history`, the
hand grade `_hand_grade`, the one wording of why a case failed `_why`, `_export` to other tools' formats).

May import: `_util`, `_contain`, `trajectory`, `_shell`, `wire`, `_scrub`, `models`, `endpoint`, `agent`,
`expect` and `case`: never the runner, the suite files or a renderer (they import this).
"""
