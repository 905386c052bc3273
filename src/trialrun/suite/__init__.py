"""From files to cases: suite files (tests.json / tests.yaml, `_tests_file`), the configuration (trialrun.toml,
`config`), runnable cases built from both (`_build`: the model per trial, the agent, the rubric, the `judge`), and a
stored run graded again by the current suite (`_regrade`).

May import: everything up to `run` and `agents`; never a renderer, the viewer or the CLI. The suite file's names
are here as well (`trialrun.suite.read_suite`, `trialrun.suite.suite_json_schema`), as in the first layout.
"""

from __future__ import annotations

from ._tests_file import (
    EXPECT_FORMS,
    SuiteError,
    SuiteFile,
    SuiteTest,
    build_expectations,
    expect_items,
    read_suite,
    suite_json_schema,
)

__all__ = ["SuiteTest", "SuiteError", "SuiteFile", "read_suite", "suite_json_schema", "EXPECT_FORMS",
           "build_expectations", "expect_items"]
