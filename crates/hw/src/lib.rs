//! Hardware performance model: compute speed, memory bandwidth sharing, cache-line transfer and wakeup latencies.
