//! What can go wrong talking to a forge, as types a caller branches on, each with a message that says what
//! to do. No message ever holds the token.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ForgeError {
    /// The settings do not name a forge, a repository or an API.
    #[error("{0}")]
    Config(String),
    /// No token in the environment.
    #[error("no token for {forge}: set {vars}")]
    NoToken { forge: &'static str, vars: String },
    /// 401: the token is missing, wrong or expired.
    #[error("{forge} rejected the token from {var} (401 Unauthorized): it is wrong or expired")]
    Unauthorized { forge: &'static str, var: String },
    /// 403: the token lacks a scope or the account lacks access (or a rate limit that did not clear).
    #[error("{forge} refused {action} (403 Forbidden): the token from {var} {detail}")]
    Forbidden {
        forge: &'static str,
        action: String,
        var: String,
        /// The scope it lacks, the repository and the forge's message.
        detail: String,
    },
    /// 404: the repository or pull request does not exist (or the token cannot see it).
    #[error("{forge}: {what} not found (404); check --forge-repo and --api-url, and that the token can see it")]
    NotFound { forge: &'static str, what: String },
    /// 422: the forge refused the request as invalid.
    #[error("{forge} refused {action} (422): {message}")]
    Unprocessable {
        forge: &'static str,
        action: String,
        message: String,
    },
    /// Any other HTTP status.
    #[error("{forge} answered {status} to {action}: {message}")]
    Status {
        forge: &'static str,
        action: String,
        status: u16,
        message: String,
    },
    /// The forge could not be reached.
    #[error("cannot reach {forge} at {api} ({action}): {reason}")]
    Network {
        forge: &'static str,
        api: String,
        action: String,
        reason: String,
    },
    /// The forge's TLS certificate is not one vouch trusts (an unknown CA, a self-signed certificate, a
    /// name that does not match).
    #[error("cannot trust {forge} at {api} ({action}): its TLS certificate failed verification: {reason}; {hint}", hint = super::tls::UNTRUSTED_HINT)]
    Certificate {
        forge: &'static str,
        api: String,
        action: String,
        reason: String,
    },
    /// The answer was not what the API documents.
    #[error("{forge} answered {action} with something unexpected: {reason}")]
    Protocol {
        forge: &'static str,
        action: String,
        reason: String,
    },
}
