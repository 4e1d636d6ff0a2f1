//! Workloads: task programs (compute, memory, sync steps) and the built-in benchmarks.
