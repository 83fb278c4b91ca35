//! The client's side of a SASL login, as Kafka's clients make it: SaslHandshake v1 naming the
//! mechanism, then SaslAuthenticate v2 exchanges carrying the mechanism's messages — PLAIN's one
//! message, or SCRAM's client-first / client-final (RFC 5802, RFC 7677) with the server's
//! signature checked, so a broker that does not hold the credential cannot pass for one that
//! does.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::StrBytes;
use subtle::ConstantTimeEq;

use crate::connection::{ClientError, ProtocolClient};
use crate::mechanism::{Mechanism, ScramMechanism};
use crate::scram_client::{client_final, client_first_bare, client_nonce};
use crate::security::SaslLogin;

impl ProtocolClient {
    /// Logs in with `login`; the connection is ready for requests when this returns `Ok`.
    pub(crate) async fn authenticate(&mut self, login: &SaslLogin) -> Result<(), ClientError> {
        let handshake = SaslHandshakeRequest::default()
            .with_mechanism(StrBytes::from_static_str(login.mechanism.name()));
        let answer = self.call(1, &handshake).await?;
        if answer.error_code != 0 {
            let enabled: Vec<&str> = answer.mechanisms.iter().map(|m| m.as_str()).collect();
            return Err(self.refused(format!(
                "the broker does not serve SASL mechanism {} (it serves: {}; error code {})",
                login.mechanism.name(),
                enabled.join(", "),
                answer.error_code
            )));
        }
        match login.mechanism {
            Mechanism::Plain => {
                let message = format!("\0{}\0{}", login.username, login.password);
                self.sasl_step(message.into_bytes()).await?;
                Ok(())
            }
            Mechanism::Scram(mechanism) => self.scram(mechanism, login).await,
            Mechanism::OAuthBearer => {
                Err(self.refused("OAUTHBEARER logins are not made by Weir's protocol client"))
            }
        }
    }

    async fn scram(
        &mut self,
        mechanism: ScramMechanism,
        login: &SaslLogin,
    ) -> Result<(), ClientError> {
        let client_nonce = client_nonce().map_err(|reason| self.refused(reason))?;
        let client_first_bare = client_first_bare(&login.username, &client_nonce);
        let server_first = self
            .sasl_step(format!("n,,{client_first_bare}").into_bytes())
            .await?;
        let server_first = String::from_utf8(server_first.to_vec())
            .map_err(|_| self.refused("the server-first SCRAM message is not UTF-8"))?;
        let (client_final, server_signature) = client_final(
            mechanism,
            login.password.as_bytes(),
            &client_first_bare,
            &server_first,
            &client_nonce,
        )
        .map_err(|reason| self.refused(reason))?;
        let server_final = self.sasl_step(client_final.into_bytes()).await?;
        let verified = std::str::from_utf8(&server_final)
            .ok()
            .and_then(|text| text.strip_prefix("v="))
            .and_then(|signature| STANDARD.decode(signature).ok())
            .is_some_and(|signature| bool::from(signature.ct_eq(&server_signature)));
        match verified {
            true => Ok(()),
            false => Err(self.refused(
                "the broker's SCRAM signature is wrong: it does not hold this user's credential",
            )),
        }
    }

    /// One SaslAuthenticate round trip: the server's answer, or its refusal.
    async fn sasl_step(&mut self, message: Vec<u8>) -> Result<Bytes, ClientError> {
        let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(message));
        let answer = self.call(2, &request).await?;
        if answer.error_code != 0 {
            let message = answer.error_message.as_deref().unwrap_or("").to_string();
            return Err(self.refused(format!(
                "SASL authentication failed (error code {}): {message}",
                answer.error_code
            )));
        }
        Ok(answer.auth_bytes)
    }

    fn refused(&self, reason: impl Into<String>) -> ClientError {
        ClientError::Authentication {
            address: self.address.clone(),
            reason: reason.into(),
        }
    }
}
