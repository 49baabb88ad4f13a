"""Reports: the document model rendered to Markdown and HTML (``document``), the figures (``plots``),
the comparison report (``comparison_report``) and its sections (``sections``)."""
