"""Renderers: JSON (the public summary contract), terminal, Markdown and HTML, all from one view."""
