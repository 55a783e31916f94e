//! Views: pure reads of the app state.
