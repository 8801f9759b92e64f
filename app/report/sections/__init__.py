"""The text of report.md's sections (Markdown lines), one module per section or view; :mod:`app.report.render`
puts them in order.
"""
