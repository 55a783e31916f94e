//! TUI state and its pure update.
