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
use ring::rand::{SecureRandom, SystemRandom};
use subtle::ConstantTimeEq;

use super::security::SaslLogin;
use super::{ClientError, ProtocolClient};
use crate::security::sasl::Mechanism;
use crate::security::scram::ScramMechanism;

/// Random bytes in the client's part of the SCRAM nonce.
const CLIENT_NONCE_BYTES: usize = 24;
/// Iterations a server may ask for (Kafka's upper bound is 16384); more is refused rather than
/// spending the CPU a hostile server asks for.
const MAX_SERVER_ITERATIONS: u32 = 100_000;

impl ProtocolClient {
    /// Logs in with `login`; the connection is ready for requests when this returns `Ok`.
    pub(super) async fn authenticate(&mut self, login: &SaslLogin) -> Result<(), ClientError> {
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
        let client_first_bare = format!("n={},r={client_nonce}", sasl_name(&login.username));
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

/// The client-final message and the server signature it expects, from the server-first message
/// `r=<nonce>,s=<salt>,i=<iterations>`.
fn client_final(
    mechanism: ScramMechanism,
    password: &[u8],
    client_first_bare: &str,
    server_first: &str,
    client_nonce: &str,
) -> Result<(String, Vec<u8>), String> {
    let field = |name: &str| {
        server_first
            .split(',')
            .find_map(|part| part.strip_prefix(name))
            .ok_or_else(|| format!("the server-first SCRAM message has no {name}"))
    };
    let nonce = field("r=")?;
    if !nonce.starts_with(client_nonce) || nonce.len() == client_nonce.len() {
        return Err("the server's SCRAM nonce does not extend the client's".into());
    }
    let salt = STANDARD
        .decode(field("s=")?)
        .map_err(|_| "the server's SCRAM salt is not base64".to_string())?;
    let iterations: u32 = field("i=")?
        .parse()
        .map_err(|_| "the server's SCRAM iteration count is not a number".to_string())?;
    if iterations == 0 || iterations > MAX_SERVER_ITERATIONS {
        return Err(format!(
            "the server asks for {iterations} SCRAM iterations (at most {MAX_SERVER_ITERATIONS})"
        ));
    }
    let salted = mechanism.salted_password(password, &salt, iterations);
    let client_key = mechanism.client_key(&salted);
    let stored_key = mechanism.hash(&client_key);
    let without_proof = format!("c=biws,r={nonce}");
    let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
    let client_signature = mechanism.hmac(&stored_key, auth_message.as_bytes());
    let proof: Vec<u8> = client_key
        .iter()
        .zip(&client_signature)
        .map(|(key, signature)| key ^ signature)
        .collect();
    let server_signature = mechanism.hmac(&mechanism.server_key(&salted), auth_message.as_bytes());
    Ok((
        format!("{without_proof},p={}", STANDARD.encode(proof)),
        server_signature,
    ))
}

/// A user name as SCRAM writes it: `=` and `,` escaped.
fn sasl_name(user: &str) -> String {
    user.replace('=', "=3D").replace(',', "=2C")
}

fn client_nonce() -> Result<String, String> {
    let mut bytes = [0u8; CLIENT_NONCE_BYTES];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "no randomness for a SCRAM nonce".to_string())?;
    Ok(STANDARD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::sasl::{Credentials, Exchange, Step};
    use crate::security::scram::ScramCredential;

    struct OneUser(ScramCredential);

    impl Credentials for OneUser {
        fn scram(&self, user: &str, _: ScramMechanism) -> Option<ScramCredential> {
            (user == "al,ice").then(|| self.0.clone())
        }
        fn plain_password(&self, _: &str) -> Option<String> {
            None
        }
    }

    /// The client's messages against the broker's own SCRAM server: accepted, and the server's
    /// signature is the one the client expects.
    #[test]
    fn scram_client_messages_pass_the_server_side() {
        for mechanism in ScramMechanism::ALL {
            let credential =
                ScramCredential::from_password(mechanism, "pencil", b"salt".to_vec(), 4096);
            let store = OneUser(credential);
            let mut server = Exchange::new(Mechanism::Scram(mechanism));
            let nonce = client_nonce().unwrap();
            let first_bare = format!("n={},r={nonce}", sasl_name("al,ice"));
            let Step::Challenge(server_first) = server
                .step(format!("n,,{first_bare}").as_bytes(), &store)
                .unwrap()
            else {
                panic!("no server-first message")
            };
            let server_first = String::from_utf8(server_first).unwrap();
            let (last, expected_signature) =
                client_final(mechanism, b"pencil", &first_bare, &server_first, &nonce).unwrap();
            let Step::Done { response, .. } = server.step(last.as_bytes(), &store).unwrap() else {
                panic!("the server did not accept the proof")
            };
            let signature = String::from_utf8(response).unwrap();
            assert_eq!(
                signature,
                format!("v={}", STANDARD.encode(expected_signature))
            );

            let mut server = Exchange::new(Mechanism::Scram(mechanism));
            let Step::Challenge(server_first) = server
                .step(format!("n,,{first_bare}").as_bytes(), &store)
                .unwrap()
            else {
                panic!("no server-first message")
            };
            let server_first = String::from_utf8(server_first).unwrap();
            let (wrong, _) =
                client_final(mechanism, b"wrong", &first_bare, &server_first, &nonce).unwrap();
            assert!(server.step(wrong.as_bytes(), &store).is_err());
        }
    }

    #[test]
    fn hostile_server_first_messages_are_refused() {
        let nonce = "abc";
        let first = "n=u,r=abc";
        for (server_first, expected) in [
            ("r=xyz123,s=c2FsdA==,i=4096", "does not extend"),
            ("r=abc,s=c2FsdA==,i=4096", "does not extend"),
            ("r=abcdef,s=***,i=4096", "not base64"),
            ("r=abcdef,s=c2FsdA==,i=4000000000", "iterations"),
            ("r=abcdef,s=c2FsdA==", "has no i="),
        ] {
            let error =
                client_final(ScramMechanism::Sha256, b"p", first, server_first, nonce).unwrap_err();
            assert!(error.contains(expected), "{server_first}: {error}");
        }
    }
}
