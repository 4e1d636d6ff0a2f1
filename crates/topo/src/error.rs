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

    /// The error with every line break in its texts (names and values quoted
    /// from the input may hold some) replaced: see [`one_line`].
    pub(crate) fn into_one_line(self) -> TopoError {
        let f = |s: String| one_line(&s);
        match self {
            TopoError::Io { origin, reason } => TopoError::Io {
                origin: f(origin),
                reason: f(reason),
            },
            TopoError::Parse {
                origin,
                field,
                reason,
            } => TopoError::Parse {
                origin: f(origin),
                field: f(field),
                reason: f(reason),
            },
            TopoError::Invalid {
                origin,
                field,
                reason,
            } => TopoError::Invalid {
                origin: f(origin),
                field: f(field),
                reason: f(reason),
            },
            TopoError::UnknownMachine {
                name,
                valid,
                reason,
            } => TopoError::UnknownMachine {
                name: f(name),
                valid: f(valid),
                reason: f(reason),
            },
            TopoError::UnknownPreset { name, valid } => TopoError::UnknownPreset {
                name: f(name),
                valid: f(valid),
            },
            TopoError::Domains { origin, reason } => TopoError::Domains {
                origin: f(origin),
                reason: f(reason),
            },
        }
    }
}

/// `s` on one line: line breaks and tabs become spaces, other control
/// characters their escapes.
pub(crate) fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}
