"""The sections of the comparison report (``embtie.reporting.comparison_report``), one function per section.

A section is a function ``ReportContext -> list[Block]``: it reads the comparison's saved results from
the context, draws its plots into ``ctx.out_dir`` and returns its heading, text, tables and figures.
``embtie.reporting.comparison_report.SECTIONS`` lists them in report order; a new analysis writes its section
function here and adds it to that list."""

from embtie.reporting.sections.context import Block, ReportContext, Section, make_context

__all__ = ["Block", "ReportContext", "Section", "make_context"]
