//! The integration test binary: runs the `schedlab` executable as a user would.

mod cli;
mod determinism;
