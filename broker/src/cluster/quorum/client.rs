//! A broker's way to the active controller: asks the voter it believes leads, follows
//! `NotController` hints, and retries while no controller can answer, up to a deadline.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::rpc::{
    ControllerRequest, ControllerResponse, QuorumClient, QuorumRequest, QuorumResponse,
};
use super::security::ControllerSecurity;
use super::NodeId;

/// How long one attempt at one voter may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);
/// Pause before trying again when no voter knew a leader.
const RETRY_BACKOFF: Duration = Duration::from_millis(100);

#[derive(Debug, thiserror::Error)]
#[error("no active controller answered within {timeout:?} (last: {last_error})")]
pub struct NoController {
    pub timeout: Duration,
    pub last_error: String,
}

pub struct ControllerClient {
    voters: Vec<NodeId>,
    clients: BTreeMap<NodeId, QuorumClient>,
    leader: Option<NodeId>,
    next_voter: usize,
}

impl ControllerClient {
    pub fn new(voters: &BTreeMap<NodeId, String>, security: &Arc<ControllerSecurity>) -> Self {
        ControllerClient {
            voters: voters.keys().copied().collect(),
            clients: voters
                .iter()
                .map(|(id, address)| {
                    (
                        *id,
                        QuorumClient::new(address.clone(), Arc::clone(security)),
                    )
                })
                .collect(),
            leader: None,
            next_voter: 0,
        }
    }

    /// Sends `request` to the active controller; `Done`, `Quorum` or `Rejected` is its answer.
    pub async fn call(
        &mut self,
        request: ControllerRequest,
        timeout: Duration,
    ) -> Result<ControllerResponse, NoController> {
        if self.voters.is_empty() {
            return Err(NoController {
                timeout,
                last_error: "controller.quorum.voters is empty".into(),
            });
        }
        let deadline = Instant::now() + timeout;
        let request = QuorumRequest::Controller(request);
        let mut last_error;
        loop {
            let target = self.target();
            let attempt = ATTEMPT_TIMEOUT.min(deadline.saturating_duration_since(Instant::now()));
            let Some(client) = self.clients.get_mut(&target) else {
                return Err(NoController {
                    timeout,
                    last_error: format!("voter {target} has no address"),
                });
            };
            match client.call(&request, attempt).await {
                Ok(QuorumResponse::Controller(response)) => match response {
                    ControllerResponse::Done { .. }
                    | ControllerResponse::Quorum(_)
                    | ControllerResponse::Rejected(_) => {
                        self.leader = Some(target);
                        return Ok(response);
                    }
                    ControllerResponse::NotController { leader } => {
                        last_error = format!("voter {target} does not lead");
                        self.leader = leader
                            .map(|(id, _)| id)
                            .filter(|id| *id != target && self.clients.contains_key(id));
                        if self.leader.is_none() {
                            self.pause(deadline).await;
                        }
                    }
                    ControllerResponse::Unavailable(reason) => {
                        last_error = format!("voter {target}: {reason}");
                        self.pause(deadline).await;
                    }
                },
                Ok(other) => {
                    last_error = format!("voter {target} answered {other:?}");
                    self.leader = None;
                }
                Err(error) => {
                    last_error = error.to_string();
                    self.leader = None;
                    self.pause(deadline).await;
                }
            }
            if Instant::now() >= deadline {
                return Err(NoController {
                    timeout,
                    last_error,
                });
            }
        }
    }

    /// The believed leader, or the next voter in turn.
    fn target(&mut self) -> NodeId {
        if let Some(leader) = self.leader {
            return leader;
        }
        let target = self.voters[self.next_voter % self.voters.len()];
        self.next_voter += 1;
        target
    }

    async fn pause(&self, deadline: Instant) {
        let until = (Instant::now() + RETRY_BACKOFF).min(deadline);
        tokio::time::sleep_until(until).await;
    }
}
