//! A JSON document posted to a webhook (`history --alert --webhook URL`):
//! one POST, a 2xx answer or an error that says what the receiver said.
//! HTTPS trusts the system's certificates (a lab's own CA is usually
//! there), else Mozilla's; http:// is allowed, as for a receiver on the
//! same machine.

use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("webhook {url}: {why}")]
    Post { url: String, why: String },
}

/// POST `body` to `url` as JSON; an answer outside 2xx is an error.
pub fn post(url: &str, body: &serde_json::Value) -> Result<(), WebhookError> {
    let fail = |why: String| WebhookError::Post { url: url.to_string(), why };
    let native = rustls_native_certs::load_native_certs().certs;
    let roots = if native.is_empty() {
        ureq::tls::RootCerts::WebPki
    } else {
        let certs = native.iter().map(|c| ureq::tls::Certificate::from_der(c.as_ref()).to_owned()).collect();
        ureq::tls::RootCerts::Specific(Arc::new(certs))
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(30)))
        .http_status_as_error(false)
        .tls_config(ureq::tls::TlsConfig::builder().root_certs(roots).build())
        .build()
        .into();
    let text = serde_json::to_string(body).map_err(|e| fail(e.to_string()))?;
    let mut answer =
        agent.post(url).content_type("application/json").send(text.as_str()).map_err(|e| fail(e.to_string()))?;
    let status = answer.status();
    if !status.is_success() {
        let said = answer.body_mut().read_to_string().unwrap_or_default();
        let said: String = said.chars().take(200).collect();
        return Err(fail(format!("answered {status}: {}", said.trim())));
    }
    Ok(())
}
