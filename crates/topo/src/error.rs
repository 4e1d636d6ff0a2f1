//! The crate's error type.
//!
//! Every message is one line that names where the input came from (a file path,
//! `preset:NAME`, a sysfs root ...), the field at fault and the reason, so that the
//! CLI can print it as is and exit with status 2.

/// Errors of machine loading, presets, sysfs import and domain building.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopoError {
    /// The input could not be read at all.
    #[error("{origin}: cannot read: {reason}")]
    Io { origin: String, reason: String },
    /// The text is not valid TOML, has an unknown key, or a value of the wrong type.
    #[error("{origin}: field `{field}`: {reason}")]
    Parse {
        origin: String,
        field: String,
        reason: String,
    },
    /// The file is well-formed but describes an impossible machine.
    #[error("{origin}: field `{field}`: {reason}")]
    Invalid {
        origin: String,
        field: String,
        reason: String,
    },
    /// A name that is neither a preset nor a readable machine file.
    #[error("unknown machine `{name}`: not a preset (valid: {valid}) and {reason}")]
    UnknownMachine {
        name: String,
        valid: String,
        reason: String,
    },
    /// A preset name that does not exist.
    #[error("unknown preset `{name}` (valid: {valid})")]
    UnknownPreset { name: String, valid: String },
    /// The domain builder met a machine it cannot handle (should not happen for a
    /// validated machine).
    #[error("{origin}: sched domains: {reason}")]
    Domains { origin: String, reason: String },
}

impl TopoError {
    pub(crate) fn invalid(
        origin: &str,
        field: impl Into<String>,
        reason: impl Into<String>,
    ) -> TopoError {
        TopoError::Invalid {
            origin: origin.to_string(),
            field: field.into(),
            reason: reason.into(),
        }
    }
}
