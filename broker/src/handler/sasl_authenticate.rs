//! SaslAuthenticate: one token of a SASL exchange. On a SASL listener the connection answers
//! it while authenticating (`server::authentication`, with [`response`]); one reaching the
//! handlers is ILLEGAL_SASL_STATE, as Kafka answers after authentication.

use bytes::Bytes;
use kafka_protocol::messages::SaslAuthenticateResponse;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

/// A token for the client, or the failure that ends the exchange.
pub fn response(
    outcome: Result<(Vec<u8>, i64), (ResponseError, String)>,
) -> SaslAuthenticateResponse {
    match outcome {
        Ok((token, session_lifetime_ms)) => SaslAuthenticateResponse::default()
            .with_auth_bytes(Bytes::from(token))
            .with_session_lifetime_ms(session_lifetime_ms),
        Err((error, message)) => SaslAuthenticateResponse::default()
            .with_error_code(error.code())
            .with_error_message(Some(StrBytes::from_string(message))),
    }
}

/// A token outside an authentication.
pub fn handle() -> SaslAuthenticateResponse {
    response(Err((
        ResponseError::IllegalSaslState,
        "SaslAuthenticate request received after successful authentication".to_string(),
    )))
}
