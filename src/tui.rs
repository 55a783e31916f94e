//! The terminal: setup, restore, input thread, event loop.
