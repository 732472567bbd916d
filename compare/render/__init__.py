"""Renderers of the result model: terminal (rich), Markdown (pull-request comment) and JSON.

All of them read the same `compare.model.results.Report`; `tables.build` turns it into titled tables with
legends once, so the terminal and the Markdown say the same thing.
"""
