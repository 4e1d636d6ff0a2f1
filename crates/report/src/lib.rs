//! Statistics (mmtests conventions), comparison tables and results.json.
//!
//! - [`stats`]: means, spreads, best-95% means, percentiles, percent changes and
//!   the significance rule of mmtests' compare-kernels.
//! - [`results`]: the `schedlab.results/1` document and a builder from raw samples.
//! - [`table`]: compare-kernels-style text tables and a cross-experiment summary.
//! - [`plot`]: SVG plots of an experiment (means per config, ours against the
//!   published changes).

pub mod plot;
pub mod results;
pub mod stats;
pub mod table;

pub use plot::{plot_experiment, Plot, PlotError};
pub use results::{
    is_special_file, params, tmp_path, write_atomically, ExperimentResult, MetricSpec, Params,
    PointSeeds, ReportError, Results, Row, RowMove, SampleRow, SensitivityEntry, VerdictChange,
    SCHEMA,
};
pub use stats::{MeanKind, Summary};
pub use table::{
    render_experiment, render_experiments, render_summary, SummaryOptions, TableOptions,
};
