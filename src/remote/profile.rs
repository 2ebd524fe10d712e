//! AWS credentials and settings as the AWS CLI keeps them: a named profile
//! (`--profile`, else `AWS_PROFILE`, else `default`) in `~/.aws/config`
//! (`[profile NAME]`, `[default]`) and `~/.aws/credentials` (`[NAME]`), or
//! the files `AWS_CONFIG_FILE` and `AWS_SHARED_CREDENTIALS_FILE` name. A
//! profile gives keys (`aws_access_key_id`, `aws_secret_access_key`,
//! `aws_session_token`) or a `credential_process` (a command printing
//! them as JSON, run once per process), and may give `region` and
//! `endpoint_url`. The files are read with the `rust-ini` crate.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// A failure to read the profile, in the words of the remote errors.
fn remote(reason: impl Into<String>) -> Error {
    Error::Remote {
        reason: reason.into(),
        io: std::io::ErrorKind::Other,
    }
}

/// What a profile says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Profile {
    pub(super) name: String,
    pub(super) access_key_id: Option<String>,
    pub(super) secret_access_key: Option<String>,
    pub(super) session_token: Option<String>,
    pub(super) credential_process: Option<String>,
    pub(super) region: Option<String>,
    pub(super) endpoint_url: Option<String>,
}

/// Keys for signing requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Keys {
    pub(super) access_key_id: String,
    pub(super) secret_access_key: String,
    pub(super) session_token: Option<String>,
}

/// The profile named on the command line (`--profile`), if one was.
static CHOSEN: OnceLock<String> = OnceLock::new();

/// Uses the profile `name` for every remote request of this process, as
/// the AWS CLI's `--profile` does (it overrides `AWS_PROFILE` and the
/// `AWS_ACCESS_KEY_ID` environment). Only the first call counts.
pub fn set_profile(name: &str) {
    let _ = CHOSEN.set(name.to_string());
}

/// Whether a profile was named explicitly (`--profile`), and which.
pub(super) fn chosen() -> Option<&'static str> {
    CHOSEN.get().map(String::as_str)
}

fn home_file(var: &str, rel: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var) {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(rel))
}

/// The profile to use: `--profile`, else `AWS_PROFILE`, else `default`;
/// `None` when neither file has it (an explicitly named profile that does
/// not exist is an error, as with the AWS CLI).
pub(super) fn load() -> Result<Option<Profile>> {
    let explicit = chosen()
        .map(str::to_string)
        .or_else(|| std::env::var("AWS_PROFILE").ok().filter(|p| !p.is_empty()));
    let name = explicit.clone().unwrap_or_else(|| "default".into());
    let read = |path: Option<PathBuf>| -> Result<Option<ini::Ini>> {
        let Some(path) = path else { return Ok(None) };
        match std::fs::read_to_string(&path) {
            Ok(text) => ini::Ini::load_from_str_noescape(&text)
                .map(Some)
                .map_err(|e| remote(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(remote(format!("{}: {e}", path.display()))),
        }
    };
    let config = read(home_file("AWS_CONFIG_FILE", ".aws/config"))?;
    let creds = read(home_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials"))?;
    let config_section = if name == "default" {
        "default".to_string()
    } else {
        format!("profile {name}")
    };
    let from_config = config
        .as_ref()
        .and_then(|c| c.section(Some(config_section.as_str())));
    let from_creds = creds.as_ref().and_then(|c| c.section(Some(name.as_str())));
    if from_config.is_none() && from_creds.is_none() {
        return match explicit {
            Some(n) => Err(remote(format!(
                "the AWS profile {n:?} is in neither ~/.aws/config nor ~/.aws/credentials"
            ))),
            None => Ok(None),
        };
    }
    // The credentials file's values win over the config file's.
    let get = |key: &str| {
        from_creds
            .and_then(|s| s.get(key))
            .or_else(|| from_config.and_then(|s| s.get(key)))
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    Ok(Some(Profile {
        name,
        access_key_id: get("aws_access_key_id"),
        secret_access_key: get("aws_secret_access_key"),
        session_token: get("aws_session_token"),
        credential_process: get("credential_process"),
        region: get("region"),
        endpoint_url: get("endpoint_url"),
    }))
}

impl Profile {
    /// The profile's keys: its own, else those its `credential_process`
    /// prints (run once per process); `None` when it has neither.
    pub(super) fn keys(&self) -> Result<Option<Keys>> {
        if let (Some(id), Some(secret)) = (&self.access_key_id, &self.secret_access_key) {
            return Ok(Some(Keys {
                access_key_id: id.clone(),
                secret_access_key: secret.clone(),
                session_token: self.session_token.clone(),
            }));
        }
        let Some(cmd) = &self.credential_process else {
            return Ok(None);
        };
        static RAN: OnceLock<std::result::Result<Keys, String>> = OnceLock::new();
        RAN.get_or_init(|| run_process(cmd))
            .clone()
            .map(Some)
            .map_err(remote)
    }
}

/// Runs a `credential_process` command (split as a shell would, run
/// without one) and reads the keys from the JSON it prints.
fn run_process(cmd: &str) -> std::result::Result<Keys, String> {
    let words = shlex::split(cmd)
        .filter(|w| !w.is_empty())
        .ok_or_else(|| format!("credential_process {cmd:?}: not a command line"))?;
    let out = std::process::Command::new(&words[0])
        .args(&words[1..])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("credential_process {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "credential_process {cmd:?} failed ({})",
            out.status
        ));
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Printed {
        version: u32,
        access_key_id: String,
        secret_access_key: String,
        session_token: Option<String>,
    }
    let p: Printed = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("credential_process {cmd:?} printed no credentials: {e}"))?;
    if p.version != 1 {
        return Err(format!(
            "credential_process {cmd:?} printed Version {}, not 1",
            p.version
        ));
    }
    Ok(Keys {
        access_key_id: p.access_key_id,
        secret_access_key: p.secret_access_key,
        session_token: p.session_token,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_process_prints_its_keys_as_json() {
        let cmd = r#"printf '{"Version": 1, "AccessKeyId": "AK", "SecretAccessKey": "SK", "SessionToken": "T"}'"#;
        let k = run_process(cmd).unwrap();
        assert_eq!(
            k,
            Keys {
                access_key_id: "AK".into(),
                secret_access_key: "SK".into(),
                session_token: Some("T".into())
            }
        );
        assert!(run_process("false").unwrap_err().contains("failed"));
        assert!(run_process(r#"printf '{"Version": 2}'"#).is_err());
        assert!(run_process("'unclosed")
            .unwrap_err()
            .contains("not a command line"));
    }
}
