//! AWS credentials and settings as the AWS CLI keeps them: a named profile
//! (`--profile`, else `AWS_PROFILE`, else `default`) in `~/.aws/config`
//! (`[profile NAME]`, `[default]`) and `~/.aws/credentials` (`[NAME]`), or
//! the files `AWS_CONFIG_FILE` and `AWS_SHARED_CREDENTIALS_FILE` name. A
//! profile gives keys (`aws_access_key_id`, `aws_secret_access_key`,
//! `aws_session_token`) or a `credential_process` (a command printing
//! them as JSON, run once per process), or an IAM Identity Center (SSO)
//! role (`sso_account_id`, `sso_role_name`, with an `sso_session` section
//! or the older `sso_start_url`/`sso_region`): its token is read from the
//! AWS CLI's cache (`~/.aws/sso/cache/<sha1>.json`, written by `aws sso
//! login`) and exchanged for the role's keys ([`SsoLogin`]); and it may
//! give `region` and `endpoint_url`. The files are read with the
//! `rust-ini` crate.

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
    /// The SSO role, if the profile names one: (account, role, the
    /// session's name or the start URL, the SSO region).
    pub(super) sso: Option<Sso>,
}

/// An IAM Identity Center role a profile names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Sso {
    account_id: String,
    role_name: String,
    /// The `sso_session` section's name (its token cache is keyed by it),
    /// or `None` for a legacy profile (keyed by the start URL).
    session: Option<String>,
    start_url: String,
    region: String,
}

/// What exchanging a cached SSO token for a role's keys takes: one GET of
/// `url` with the header `x-amz-sso_bearer_token: token`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SsoLogin {
    pub(super) url: String,
    pub(super) token: String,
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
    let sso = match (get("sso_account_id"), get("sso_role_name")) {
        (Some(account_id), Some(role_name)) => {
            let session = get("sso_session");
            let section = session.as_ref().and_then(|s| {
                config
                    .as_ref()
                    .and_then(|c| c.section(Some(format!("sso-session {s}").as_str())))
            });
            let from = |key: &str| {
                section
                    .and_then(|s| s.get(key))
                    .map(|v| v.trim().to_string())
                    .or_else(|| get(key))
                    .filter(|v| !v.is_empty())
            };
            if session.is_some() && section.is_none() {
                return Err(remote(format!(
                    "the AWS profile {name:?} names the sso-session {:?}, which ~/.aws/config lacks",
                    session.unwrap_or_default()
                )));
            }
            let (Some(start_url), Some(region)) = (from("sso_start_url"), from("sso_region"))
            else {
                return Err(remote(format!(
                    "the AWS profile {name:?} names an SSO role without sso_start_url and sso_region"
                )));
            };
            Some(Sso {
                account_id,
                role_name,
                session,
                start_url,
                region,
            })
        }
        _ => None,
    };
    Ok(Some(Profile {
        sso,
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

impl Profile {
    /// The exchange of the profile's cached SSO token for its role's keys
    /// (`None`: the profile names no SSO role). A token missing or expired
    /// is an error that says to run `aws sso login`.
    pub(super) fn sso_login(&self) -> Result<Option<SsoLogin>> {
        use sha1::Digest;
        let Some(sso) = &self.sso else {
            return Ok(None);
        };
        let login = || format!("run `aws sso login --profile {}` and try again", self.name);
        let key = sso.session.as_deref().unwrap_or(&sso.start_url);
        let hex: String = sha1::Sha1::digest(key.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let Some(home) = std::env::var_os("HOME") else {
            return Err(remote(format!(
                "no HOME for the SSO token cache: {}",
                login()
            )));
        };
        let dir = PathBuf::from(home).join(".aws/sso/cache");
        let path = dir.join(format!("{hex}.json"));
        let text = match std::fs::metadata(&path) {
            // A token file is small; a large one is not one.
            Ok(m) if m.len() <= 1 << 20 => std::fs::read_to_string(&path).ok(),
            _ => None,
        };
        let Some(text) = text else {
            return Err(remote(format!(
                "no cached SSO token for the AWS profile {:?} ({}): {}",
                self.name,
                path.display(),
                login()
            )));
        };
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Cached {
            access_token: String,
            expires_at: String,
        }
        let c: Cached = serde_json::from_str(&text).map_err(|e| {
            remote(format!(
                "{}: not an SSO token ({e}): {}",
                path.display(),
                login()
            ))
        })?;
        let expires = humantime::parse_rfc3339_weak(
            c.expires_at.trim_end_matches("UTC").trim_end_matches('Z'),
        )
        .map_err(|_| {
            remote(format!(
                "{}: an expiry that is not a time: {}",
                path.display(),
                login()
            ))
        })?;
        if expires <= std::time::SystemTime::now() {
            return Err(remote(format!(
                "the SSO session of the AWS profile {:?} has expired: {}",
                self.name,
                login()
            )));
        }
        let base = std::env::var("AWS_ENDPOINT_URL_SSO")
            .ok()
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| format!("https://portal.sso.{}.amazonaws.com", sso.region));
        let query = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("role_name", &sso.role_name)
            .append_pair("account_id", &sso.account_id)
            .finish();
        Ok(Some(SsoLogin {
            url: format!(
                "{}/federation/credentials?{query}",
                base.trim_end_matches('/')
            ),
            token: c.access_token,
        }))
    }
}

/// The keys in the SSO portal's answer (`{"roleCredentials": {...}}`).
pub(super) fn sso_keys(body: &[u8]) -> std::result::Result<Keys, String> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Role {
        access_key_id: String,
        secret_access_key: String,
        session_token: Option<String>,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Answer {
        role_credentials: Role,
    }
    let a: Answer = serde_json::from_slice(body)
        .map_err(|e| format!("the SSO portal's answer holds no role credentials: {e}"))?;
    Ok(Keys {
        access_key_id: a.role_credentials.access_key_id,
        secret_access_key: a.role_credentials.secret_access_key,
        session_token: a.role_credentials.session_token,
    })
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
