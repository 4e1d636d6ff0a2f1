//! Experiments (the reference tables), their runner and reports.
