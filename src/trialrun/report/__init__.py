"""What a run produced, kept and read back: the results model (`results`), the files that hold it (the run's
`journal`, the results `store`, each trial's exchanges sidecar `exchanges`, the eval skill's result files
`_skill_results`), and what is worked out from it (`metrics`, `_trajdiff`, `_history`, the hand grades and
overrides `_grading` written by `_hand_grade`, the judges against them `_agreement`, the one wording of why a case
failed `_why`, `_export` to other tools' formats), and the verdict on a change: `compare` (its data `_comparison`),
decided in one place (`_verdict`) from what kind of models the runs talked to (`_models_used`), broken safety claims
(`_safety`) and, for live runs, the exact tests (`_stats`), the intervals (`_intervals`) and the power (`_power`).

May import: `_util`, `_contain`, `trajectory`, `_shell`, `wire`, `_scrub`, `models`, `endpoint`, `agent`,
`expect` and `case`: never the runner, the suite files or a renderer (they import this).
"""
