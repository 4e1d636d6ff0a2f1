//! Built-in workload specs: `NAME:key=value,key=value` (shared/contract.md).

use std::collections::BTreeMap;
use thiserror::Error;

/// A bad workload spec; the message names the key and the reason.
#[derive(Debug, Error, PartialEq)]
pub enum SpecError {
    #[error("workload '{0}': unknown workload (valid: {1})")]
    UnknownWorkload(String, String),
    #[error("workload '{workload}': unknown key '{key}' (valid: {valid})")]
    UnknownKey {
        workload: String,
        key: String,
        valid: String,
    },
    #[error("workload '{workload}': key '{key}': {reason}")]
    BadValue {
        workload: String,
        key: String,
        reason: String,
    },
    #[error("workload spec '{0}': expected NAME or NAME:key=value,...")]
    Syntax(String),
    #[error("workload spec '{spec}': key '{key}' given twice")]
    DuplicateKey { spec: String, key: String },
}

/// A parsed `NAME:key=value,...` spec.
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltinSpec {
    pub name: String,
    pub params: BTreeMap<String, String>,
}

/// Splits a spec into its name and key/value pairs (no validation of keys).
pub fn parse_spec(s: &str) -> Result<BuiltinSpec, SpecError> {
    let s = s.trim();
    let (name, rest) = match s.split_once(':') {
        Some((n, r)) => (n.trim(), r.trim()),
        None => (s, ""),
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(SpecError::Syntax(s.to_string()));
    }
    let mut params = BTreeMap::new();
    for kv in rest.split(',').map(str::trim).filter(|kv| !kv.is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| SpecError::Syntax(s.to_string()))?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() || v.is_empty() {
            return Err(SpecError::Syntax(s.to_string()));
        }
        if params.insert(k.to_string(), v.to_string()).is_some() {
            return Err(SpecError::DuplicateKey {
                spec: s.to_string(),
                key: k.to_string(),
            });
        }
    }
    Ok(BuiltinSpec {
        name: name.to_string(),
        params,
    })
}

impl BuiltinSpec {
    /// Rejects keys outside `valid`.
    pub fn check_keys(&self, valid: &[&str]) -> Result<(), SpecError> {
        for k in self.params.keys() {
            if !valid.contains(&k.as_str()) {
                return Err(SpecError::UnknownKey {
                    workload: self.name.clone(),
                    key: k.clone(),
                    valid: valid.join(", "),
                });
            }
        }
        Ok(())
    }

    /// An integer parameter within `[min, max]`, or `default` when absent.
    pub fn get_u64(&self, key: &str, default: u64, min: u64, max: u64) -> Result<u64, SpecError> {
        let Some(v) = self.params.get(key) else {
            return Ok(default);
        };
        let bad = |reason: String| SpecError::BadValue {
            workload: self.name.clone(),
            key: key.to_string(),
            reason,
        };
        let n: u64 = v
            .parse()
            .map_err(|_| bad(format!("'{v}' is not a non-negative integer")))?;
        if n < min || n > max {
            return Err(bad(format!("{n} is outside {min}..={max}")));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_validates() {
        let s = parse_spec("stream:threads=4, size_mib=512").unwrap();
        assert_eq!(s.name, "stream");
        assert_eq!(s.get_u64("threads", 1, 1, 512).unwrap(), 4);
        assert_eq!(s.get_u64("iterations", 10, 2, 1000).unwrap(), 10);
        assert!(s.check_keys(&["threads"]).is_err());
        assert!(s.get_u64("threads", 1, 5, 512).is_err());
        assert!(parse_spec("stream:threads").is_err());
        assert!(parse_spec(":x=1").is_err());
        assert!(parse_spec("stream").unwrap().params.is_empty());
        assert!(matches!(
            parse_spec("stream:threads=4,threads=5"),
            Err(SpecError::DuplicateKey { .. })
        ));
    }
}
