"""Renderers: a RunReport or a Comparison as text for the places people look (terminal, CI reports, job
summaries, a page in the browser). Each module is independent; import the one you need.

May import: everything up to `suite` (the results and comparisons they show); never the viewer or the CLI, which
import them.
"""
