//! Statistics (mmtests conventions), comparison tables and results.json.
