//! Tool-call parsing.
