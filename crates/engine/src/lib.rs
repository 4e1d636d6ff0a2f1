//! The simulator: a deterministic discrete-event model of the Linux scheduler.
//!
//! Mechanism and policy are split as in kernel/sched: [`sim`] is the core
//! (runqueues, `schedule()`, the tick, wakeups, fork, context switches),
//! [`fair`] is the fair class (EEVDF, PELT, wakeup placement, load balancing),
//! [`rt`] the RT class (SCHED_FIFO/SCHED_RR) and the class dispatch,
//! [`dl`] the deadline class (SCHED_DEADLINE),
//! [`fair_server`] the deadline server that keeps fair tasks from starving,
//! [`features`] is the switchable features table, [`tunables`] the numeric
//! knobs of the kernel's debugfs, [`exec`] interprets task
//! programs (the simulated user space). Time is integer nanoseconds; one seed
//! derives every random stream ([`rng`]); the event queue orders by
//! (time, sequence), so a run depends only on its inputs.

pub mod check;
pub mod dl;
pub mod event;
mod exec;
pub mod fair;
pub mod fair_server;
pub mod features;
pub mod hwcost;
pub mod idle_gov;
pub mod pi;
#[cfg(test)]
mod return_to_user_tests;
pub mod rng;
pub mod rq;
pub mod rt;
#[cfg(test)]
mod scenarios;
pub mod sim;
pub mod stats;
pub mod task;
pub mod timeline;
pub mod trace;
pub mod tunables;

pub use event::TaskId;
pub use exec::{MAX_INSTANT_STEPS, MAX_TASKS};
pub use features::{Feat, Features, FEATURES, S3_FIXES};
pub use sim::{MarkSink, Sim, SimConfig, StopReason, LIVELOCK_EVENTS};
pub use stats::Counters;
pub use task::{Task, TaskState};
pub use tunables::{Tunables, TUNABLES};
