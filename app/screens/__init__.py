"""Screens of the Textual TUI (app.tui).  UI only: every decision is the headless core's."""
