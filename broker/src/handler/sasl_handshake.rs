//! SaslHandshake: the client names its mechanism. On a SASL listener the connection answers it
//! while authenticating (`server::authentication`, with [`response`]); one reaching the
//! handlers — on a listener without SASL, or after authentication without the session
//! expiring into a re-authentication — is ILLEGAL_SASL_STATE, as Kafka answers.

use kafka_protocol::messages::SaslHandshakeResponse;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

/// The answer to a handshake: the listener's mechanisms, with `error` if the client's is not
/// among them.
pub fn response(
    error: Option<ResponseError>,
    mechanisms: &[&'static str],
) -> SaslHandshakeResponse {
    SaslHandshakeResponse::default()
        .with_error_code(error.map_or(0, |e| e.code()))
        .with_mechanisms(
            mechanisms
                .iter()
                .map(|m| StrBytes::from_static_str(m))
                .collect(),
        )
}

/// A handshake outside an authentication.
pub fn handle() -> SaslHandshakeResponse {
    response(Some(ResponseError::IllegalSaslState), &[])
}
