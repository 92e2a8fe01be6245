//! The one async runtime a command runs on, and Ctrl-C.
//!
//! Ctrl-C cancels the token handed to the work; the work stops its children (each in its own process group)
//! and returns, and the command decides what an interrupted result means (`vouch gate` exits 130 through
//! [`VouchError::Interrupted`], `vouch run` writes its report with the status interrupted first).

use std::future::Future;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use crate::error::VouchError;

/// How long the runtime waits for tasks still running after the work has returned.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Runs `work` on a new multi-thread runtime, with a token that Ctrl-C cancels. The runtime, and with it
/// every task and child process group it still holds, is shut down before this returns.
pub fn block_on<T, F, Fut>(work: F) -> Result<T>
where
    F: FnOnce(CancellationToken) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("start the async runtime")?;
    let cancel = CancellationToken::new();
    let out = rt.block_on(async {
        let on_signal = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_signal.cancel();
            }
        });
        work(cancel.clone()).await
    });
    rt.shutdown_timeout(SHUTDOWN_GRACE);
    out
}

/// `result`, unless `cancel` was cancelled: then [`VouchError::Interrupted`] (exit 130), whatever the work
/// made of being stopped.
pub fn unless_interrupted<T>(cancel: &CancellationToken, result: Result<T>) -> Result<T> {
    if cancel.is_cancelled() {
        Err(VouchError::Interrupted.into())
    } else {
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{exit_code_of, EXIT_INTERRUPTED};

    #[test]
    fn the_work_runs_to_its_result_on_the_runtime() {
        let out = block_on(|cancel| async move {
            tokio::task::yield_now().await;
            Ok(cancel.is_cancelled())
        });
        assert!(!out.unwrap());
    }

    #[test]
    fn a_cancelled_token_turns_any_result_into_interrupted() {
        let cancel = CancellationToken::new();
        assert_eq!(unless_interrupted(&cancel, Ok(7)).unwrap(), 7);
        cancel.cancel();
        let err = unless_interrupted(&cancel, Ok(7)).unwrap_err();
        assert_eq!(exit_code_of(&err), EXIT_INTERRUPTED);
    }
}
