"""Renderers: a RunReport or a Comparison as text for the places people look (terminal, CI reports, job
summaries, a page in the browser). Each module is independent; import the one you need."""
