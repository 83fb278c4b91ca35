//! The client's side of SCRAM (RFC 5802, RFC 7677) as pure functions: the nonce, the
//! client-first and client-final messages, and the server signature to expect. The protocol
//! client's login sends them; the broker's SCRAM server is tested against them.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ring::rand::{SecureRandom, SystemRandom};

use crate::mechanism::ScramMechanism;

/// Random bytes in the client's part of the SCRAM nonce.
const CLIENT_NONCE_BYTES: usize = 24;
/// Iterations a server may ask for (Kafka's upper bound is 16384); more is refused rather than
/// spending the CPU a hostile server asks for.
pub const MAX_SERVER_ITERATIONS: u32 = 100_000;

/// The client-first message without its GS2 header (`n,,`): `n=<user>,r=<nonce>`.
pub fn client_first_bare(user: &str, client_nonce: &str) -> String {
    format!("n={},r={client_nonce}", sasl_name(user))
}

/// The client-final message and the server signature it expects, from the server-first message
/// `r=<nonce>,s=<salt>,i=<iterations>`.
pub fn client_final(
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

pub fn client_nonce() -> Result<String, String> {
    let mut bytes = [0u8; CLIENT_NONCE_BYTES];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "no randomness for a SCRAM nonce".to_string())?;
    Ok(STANDARD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677's example exchange (user "user", password "pencil").
    #[test]
    fn the_rfc_7677_example_gives_its_proof_and_server_signature() {
        let nonce = "rOprNGfwEbeRWgbNEkqO";
        let first_bare = client_first_bare("user", nonce);
        assert_eq!(first_bare, "n=user,r=rOprNGfwEbeRWgbNEkqO");
        let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
                            s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let (last, server_signature) = client_final(
            ScramMechanism::Sha256,
            b"pencil",
            &first_bare,
            server_first,
            nonce,
        )
        .unwrap();
        assert_eq!(
            last,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
             p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        assert_eq!(
            STANDARD.encode(server_signature),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
    }

    #[test]
    fn user_names_are_escaped() {
        assert_eq!(client_first_bare("a=b,c", "n"), "n=a=3Db=2Cc,r=n");
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
