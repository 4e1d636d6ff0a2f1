//! The simulator: deterministic event engine, core scheduler, the fair class, features.
