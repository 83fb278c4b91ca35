//! The server side of SCRAM (RFC 5802) as Kafka runs it: client-first → server-first (the
//! combined nonce, the user's salt and iterations) → client-final (its proof) → server-final
//! (the server's signature). No channel binding (`n` or `y` flags only); the `tokenauth`
//! extension (delegation tokens) is refused, as Weir issues no tokens.
//!
//! An unknown user fails at the first message, as in Kafka, with the message that hides why.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ring::rand::{SecureRandom, SystemRandom};
use subtle::ConstantTimeEq;

use super::{Credentials, SaslError, Step};
use crate::security::scram::{ScramCredential, ScramMechanism, MIN_ITERATIONS};

/// Random bytes in the server's part of the nonce.
const SERVER_NONCE_BYTES: usize = 18;

pub struct ScramExchange {
    mechanism: ScramMechanism,
    state: State,
}

enum State {
    ClientFirst,
    ClientFinal(Box<Started>),
    Over,
}

/// What the server keeps between its first message and the client's final one.
struct Started {
    user: String,
    client_first_bare: String,
    server_first: String,
    nonce: String,
    credential: ScramCredential,
}

impl ScramExchange {
    pub(super) fn new(mechanism: ScramMechanism) -> ScramExchange {
        ScramExchange {
            mechanism,
            state: State::ClientFirst,
        }
    }

    pub(super) fn step(
        &mut self,
        token: &[u8],
        credentials: &dyn Credentials,
    ) -> Result<Step, SaslError> {
        let state = std::mem::replace(&mut self.state, State::Over);
        let text = std::str::from_utf8(token)
            .map_err(|_| SaslError::Hidden("a SCRAM message that is not UTF-8".into()))?;
        match state {
            State::ClientFirst => {
                let (started, server_first) = self.client_first(text, credentials)?;
                self.state = State::ClientFinal(Box::new(started));
                Ok(Step::Challenge(server_first.into_bytes()))
            }
            State::ClientFinal(started) => self.client_final(text, &started),
            State::Over => Err(SaslError::Hidden(
                "a SCRAM message after the exchange ended".into(),
            )),
        }
    }

    fn client_first(
        &self,
        text: &str,
        credentials: &dyn Credentials,
    ) -> Result<(Started, String), SaslError> {
        let first = ClientFirst::parse(text)?;
        if first
            .extensions
            .iter()
            .any(|(key, value)| *key == "tokenauth" && value.eq_ignore_ascii_case("true"))
        {
            return Err(SaslError::Hidden(format!(
                "Token Authentication failed: Invalid tokenId : {}",
                first.user
            )));
        }
        let credential = credentials
            .scram(&first.user, self.mechanism)
            .ok_or_else(|| {
                SaslError::Hidden("Authentication failed: Invalid user credentials".into())
            })?;
        if !first.authorization_id.is_empty() && first.authorization_id != first.user {
            return Err(SaslError::Visible(
                "Authentication failed: Client requested an authorization id that is different from username"
                    .into(),
            ));
        }
        if credential.iterations < MIN_ITERATIONS {
            return Err(SaslError::Hidden(format!(
                "Iterations {} is less than the minimum {MIN_ITERATIONS} for {}",
                credential.iterations, self.mechanism
            )));
        }
        let nonce = format!("{}{}", first.nonce, server_nonce()?);
        let server_first = format!(
            "r={nonce},s={},i={}",
            STANDARD.encode(&credential.salt),
            credential.iterations
        );
        let started = Started {
            user: first.user,
            client_first_bare: first.bare.to_string(),
            server_first: server_first.clone(),
            nonce,
            credential,
        };
        Ok((started, server_first))
    }

    fn client_final(&self, text: &str, started: &Started) -> Result<Step, SaslError> {
        let (without_proof, proof) = text
            .rsplit_once(",p=")
            .ok_or_else(|| SaslError::Hidden("a client-final message without a proof".into()))?;
        let nonce = without_proof
            .split(',')
            .find_map(|field| field.strip_prefix("r="))
            .ok_or_else(|| SaslError::Hidden("a client-final message without a nonce".into()))?;
        if !without_proof.starts_with("c=") {
            return Err(SaslError::Hidden(
                "a client-final message without channel binding".into(),
            ));
        }
        if nonce != started.nonce {
            return Err(SaslError::Hidden(
                "Invalid client nonce in the final client message.".into(),
            ));
        }
        let proof = STANDARD
            .decode(proof)
            .map_err(|_| SaslError::Hidden("a client proof that is not base64".into()))?;
        let mechanism = self.mechanism;
        if proof.len() != mechanism.key_len() {
            return Err(SaslError::Hidden("Invalid client credentials".into()));
        }
        let auth_message = format!(
            "{},{},{without_proof}",
            started.client_first_bare, started.server_first
        );
        let credential = &started.credential;
        let signature = mechanism.hmac(&credential.stored_key, auth_message.as_bytes());
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
        let computed: bool = mechanism
            .hash(&client_key)
            .ct_eq(&credential.stored_key)
            .into();
        if !computed {
            return Err(SaslError::Hidden("Invalid client credentials".into()));
        }
        let server_signature = mechanism.hmac(&credential.server_key, auth_message.as_bytes());
        Ok(Step::Done {
            user: started.user.clone(),
            response: format!("v={}", STANDARD.encode(server_signature)).into_bytes(),
            expires_at_ms: None,
        })
    }
}

/// The parts of a client-first message.
struct ClientFirst<'a> {
    authorization_id: String,
    user: String,
    nonce: &'a str,
    bare: &'a str,
    extensions: Vec<(&'a str, &'a str)>,
}

impl<'a> ClientFirst<'a> {
    fn parse(text: &'a str) -> Result<ClientFirst<'a>, SaslError> {
        let bad =
            |what: &str| SaslError::Hidden(format!("Invalid SCRAM client first message: {what}"));
        let (flag, rest) = text.split_once(',').ok_or_else(|| bad("no GS2 header"))?;
        if flag != "n" && flag != "y" {
            return Err(bad("channel binding is not supported"));
        }
        let (authorization, bare) = rest.split_once(',').ok_or_else(|| bad("no GS2 header"))?;
        let authorization_id = match authorization {
            "" => String::new(),
            a => sasl_name(
                a.strip_prefix("a=")
                    .ok_or_else(|| bad("a bad authorization id"))?,
            )?,
        };
        let mut fields = bare.split(',');
        let user = fields
            .next()
            .and_then(|f| f.strip_prefix("n="))
            .ok_or_else(|| bad("no user name"))?;
        let nonce = fields
            .next()
            .and_then(|f| f.strip_prefix("r="))
            .filter(|n| !n.is_empty() && n.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b','))
            .ok_or_else(|| bad("no nonce"))?;
        let extensions = fields
            .map(|field| {
                field
                    .split_once('=')
                    .ok_or_else(|| bad("a malformed extension"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ClientFirst {
            authorization_id,
            user: sasl_name(user)?,
            nonce,
            bare,
            extensions,
        })
    }
}

/// A `saslname` decoded: `=2C` is a comma, `=3D` an equals sign; no other `=` may appear.
fn sasl_name(encoded: &str) -> Result<String, SaslError> {
    let mut out = String::with_capacity(encoded.len());
    let mut rest = encoded;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        let escape = rest.get(at..at + 3);
        match escape {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => {
                return Err(SaslError::Hidden(format!(
                    "Invalid SCRAM user name {encoded:?}"
                )))
            }
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

fn server_nonce() -> Result<String, SaslError> {
    let mut bytes = [0u8; SERVER_NONCE_BYTES];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| SaslError::Hidden("no randomness for a SCRAM nonce".into()))?;
    // base64 has no comma, so the nonce is printable and needs no escaping.
    Ok(STANDARD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::sasl::{Exchange, Mechanism};
    use weir_wire::scram_client::{client_final, client_first_bare};

    struct Store(ScramMechanism, ScramCredential);

    impl Credentials for Store {
        fn scram(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
            (user == "al,ice" && mechanism == self.0).then(|| self.1.clone())
        }
        fn plain_password(&self, _: &str) -> Option<String> {
            None
        }
    }

    fn run(mechanism: ScramMechanism, password: &str) -> Result<Step, SaslError> {
        let stored =
            ScramCredential::from_password(mechanism, "right", b"salt-salt".to_vec(), 4096);
        let store = Store(mechanism, stored);
        let mut exchange = Exchange::new(Mechanism::Scram(mechanism));
        let client_nonce = "fyko+d2lbbFgONRv9qkxdawL";
        let bare = client_first_bare("al,ice", client_nonce);
        let Step::Challenge(server_first) =
            exchange.step(format!("n,,{bare}").as_bytes(), &store)?
        else {
            panic!("no challenge");
        };
        let server_first = String::from_utf8(server_first).unwrap();
        assert!(server_first.starts_with("r=fyko+d2lbbFgONRv9qkxdawL"));
        // The client's messages are the protocol client's own (weir-wire), so this also checks
        // that the two sides agree.
        let (last, expected_signature) = client_final(
            mechanism,
            password.as_bytes(),
            &bare,
            &server_first,
            client_nonce,
        )
        .unwrap();
        let step = exchange.step(last.as_bytes(), &store)?;
        if let Step::Done { response, .. } = &step {
            let expected = format!("v={}", STANDARD.encode(expected_signature));
            assert_eq!(response, expected.as_bytes());
        }
        assert!(
            exchange.step(b"again", &store).is_err(),
            "a token after the end"
        );
        Ok(step)
    }

    #[test]
    fn the_right_password_authenticates_with_both_mechanisms() {
        for mechanism in ScramMechanism::ALL {
            let step = run(mechanism, "right").unwrap();
            assert!(matches!(step, Step::Done { user, .. } if user == "al,ice"));
        }
    }

    #[test]
    fn a_wrong_password_or_unknown_user_fails_without_saying_why() {
        assert_eq!(
            run(ScramMechanism::Sha256, "wrong"),
            Err(SaslError::Hidden("Invalid client credentials".into()))
        );
        let store = Store(
            ScramMechanism::Sha256,
            ScramCredential::from_password(ScramMechanism::Sha256, "x", vec![1], 4096),
        );
        let mut exchange = Exchange::new(Mechanism::Scram(ScramMechanism::Sha512));
        let unknown = exchange.step(b"n,,n=al=2Cice,r=abc", &store);
        assert!(matches!(unknown, Err(SaslError::Hidden(_))));
    }

    #[test]
    fn malformed_first_messages_are_refused() {
        let store = Store(
            ScramMechanism::Sha256,
            ScramCredential::from_password(ScramMechanism::Sha256, "x", vec![1], 4096),
        );
        for token in [
            &b"p=tls-unique,,n=al=2Cice,r=abc"[..],
            b"n,,n=al=2Cice",
            b"n,,n=al=2Cice,r=",
            b"n,,n=al=ice,r=abc",
            b"n,,r=abc",
            b"",
            b"\xff\xfe",
            b"n,,n=al=2Cice,r=abc,tokenauth=true",
        ] {
            let mut exchange = Exchange::new(Mechanism::Scram(ScramMechanism::Sha256));
            assert!(exchange.step(token, &store).is_err(), "{token:?} accepted");
        }
        let mut exchange = Exchange::new(Mechanism::Scram(ScramMechanism::Sha256));
        let other_authzid = exchange.step(b"n,a=bob,n=al=2Cice,r=abc", &store);
        assert!(matches!(other_authzid, Err(SaslError::Visible(_))));
    }

    #[test]
    fn a_final_message_with_another_nonce_is_refused() {
        let mechanism = ScramMechanism::Sha256;
        let store = Store(
            mechanism,
            ScramCredential::from_password(mechanism, "pw", vec![7; 16], 4096),
        );
        let mut exchange = Exchange::new(Mechanism::Scram(mechanism));
        let bare = "n=al=2Cice,r=abc";
        exchange
            .step(format!("n,,{bare}").as_bytes(), &store)
            .unwrap();
        let forged = "c=biws,r=abcXYZ,p=AAAA";
        assert!(exchange.step(forged.as_bytes(), &store).is_err());
    }
}
