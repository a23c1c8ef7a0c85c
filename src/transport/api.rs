//! The HTTPS API transport: URL, verb, token header and form body; status and PVE message back.

use crate::global_args::ApiSettings;
use crate::host::{HttpRequest, HttpResponse};
use crate::pve::error::PveError;
use crate::pve::request::{PveRequest, Verb};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::Value;

/// Everything but RFC 3986 unreserved characters is encoded in a path segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Builds the HTTP exchange for one request.
pub fn assemble(settings: &ApiSettings, request: &PveRequest, timeout_ms: u64) -> HttpRequest {
    let mut url = format!("{}/api2/json", settings.api_url);
    for segment in &request.segments {
        url.push('/');
        url.extend(utf8_percent_encode(segment, SEGMENT));
    }
    let encoded = encode_form(&request.params);
    let mut headers = vec![(
        "Authorization".to_string(),
        format!(
            "PVEAPIToken={}={}",
            settings.token_id,
            settings.token_secret.expose()
        ),
    )];
    let body = match request.verb {
        Verb::Get | Verb::Delete => {
            if !encoded.is_empty() {
                url.push('?');
                url.push_str(&encoded);
            }
            None
        }
        Verb::Create | Verb::Set => {
            headers.push((
                "Content-Type".to_string(),
                "application/x-www-form-urlencoded".to_string(),
            ));
            Some(encoded)
        }
    };
    HttpRequest {
        method: request.verb.http_method(),
        url,
        headers,
        body,
        timeout_ms,
        ca_cert: settings.ca_cert.clone(),
        skip_tls_verify: settings.skip_tls_verify,
    }
}

/// `application/x-www-form-urlencoded`, an array parameter as a repeated key.
pub fn encode_form(params: &[(String, String)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params)
        .finish()
}

/// PVE's `data`, or the error PVE reported (its JSON `message`, else the HTTP reason line).
pub fn interpret(response: &HttpResponse) -> Result<Value, PveError> {
    let parsed: Option<Value> = serde_json::from_str(&response.body).ok();
    if (200..300).contains(&response.status) {
        return match parsed {
            // Taken, not removed: removing a key would bring the map's rebalancing code into
            // the module (issue 32); the object is dropped either way.
            Some(Value::Object(mut object)) => Ok(object
                .get_mut("data")
                .map(Value::take)
                .unwrap_or(Value::Null)),
            _ => Err(PveError::malformed_args(format_args!(
                "PVE answered HTTP {} with a body that is not PVE's JSON ({})",
                response.status,
                snippet(&response.body)
            ))),
        };
    }
    Err(PveError::reported(
        Some(response.status),
        &error_message(response, parsed.as_ref()),
    ))
}

fn error_message(response: &HttpResponse, parsed: Option<&Value>) -> String {
    let json_message = parsed
        .and_then(|v| v.get("message"))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty());
    let mut message = json_message
        .map(str::to_string)
        .or_else(|| Some(response.status_text.trim().to_string()).filter(|m| !m.is_empty()))
        .unwrap_or_else(|| {
            format!(
                "HTTP {} with no message ({})",
                response.status,
                snippet(&response.body)
            )
        });
    // 400s list the refused parameters separately; they are the useful part.
    if let Some(errors) = parsed
        .and_then(|v| v.get("errors"))
        .and_then(Value::as_object)
    {
        // Appended where the message lies, not listed then joined (issue 32).
        let mut opening = " (";
        for (key, why) in errors {
            message.push_str(opening);
            message.push_str(key);
            message.push_str(": ");
            message.push_str(why.as_str().unwrap_or("invalid").trim());
            opening = "; ";
        }
        if !errors.is_empty() {
            message.push(')');
        }
    }
    message
}

/// The start of a body for an error message, on one line.
pub fn snippet(body: &str) -> String {
    // Pushed in a loop, not collected: a collect from a mapped iterator is its own copy of code.
    let mut flat = String::new();
    for c in body.chars().take(160) {
        flat.push(if c.is_control() { ' ' } else { c });
    }
    if flat.trim().is_empty() {
        "empty body".to_string()
    } else if body.chars().count() > 160 {
        format!("body starts {:?}…", flat.trim())
    } else {
        format!("body {:?}", flat.trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::global_args::Secret;
    use crate::pve::error::ErrorKind;
    use crate::pve::request::Repeat;

    fn settings() -> ApiSettings {
        ApiSettings {
            node: "pve1".into(),
            api_url: "https://pve1:8006".into(),
            token_id: "root@pam!swamp".into(),
            token_secret: Secret::new("s3cret".into()),
            ca_cert: None,
            skip_tls_verify: false,
        }
    }

    fn response(status: u16, text: &str, body: &str) -> HttpResponse {
        HttpResponse {
            status,
            status_text: text.into(),
            body: body.into(),
        }
    }

    #[test]
    fn get_puts_parameters_in_the_query() {
        let r = assemble(
            &settings(),
            &PveRequest::get(&["cluster", "resources"]).param("type", "vm"),
            1000,
        );
        assert_eq!(r.method, "GET");
        assert_eq!(
            r.url,
            "https://pve1:8006/api2/json/cluster/resources?type=vm"
        );
        assert_eq!(r.body, None);
    }

    #[test]
    fn token_header_joins_id_and_secret() {
        let r = assemble(&settings(), &PveRequest::get(&["version"]), 1000);
        assert_eq!(
            r.headers[0],
            (
                "Authorization".into(),
                "PVEAPIToken=root@pam!swamp=s3cret".into()
            )
        );
    }

    #[test]
    fn post_body_repeats_array_keys_and_encodes_values() {
        let req = PveRequest::new(
            Verb::Create,
            &["nodes", "pve1", "qemu", "100", "agent", "exec"],
            Repeat::Never,
        )
        .param("command", "bash")
        .param("command", "echo a&b=c ü");
        let r = assemble(&settings(), &req, 1000);
        assert_eq!(r.method, "POST");
        assert_eq!(
            r.body.as_deref(),
            Some("command=bash&command=echo+a%26b%3Dc+%C3%BC")
        );
        assert!(r
            .headers
            .iter()
            .any(|(k, v)| k == "Content-Type" && v == "application/x-www-form-urlencoded"));
    }

    #[test]
    fn upid_segment_is_percent_encoded() {
        let req = PveRequest::get(&[
            "nodes",
            "pve1",
            "tasks",
            "UPID:pve1:1:2:3:qmstart:100:root@pam!t:",
            "status",
        ]);
        let r = assemble(&settings(), &req, 1000);
        assert!(
            r.url.ends_with(
                "/tasks/UPID%3Apve1%3A1%3A2%3A3%3Aqmstart%3A100%3Aroot%40pam%21t%3A/status"
            ),
            "{}",
            r.url
        );
    }

    #[test]
    fn success_yields_data() {
        assert_eq!(
            interpret(&response(200, "OK", r#"{"data":{"pid":7}}"#)).unwrap()["pid"],
            7
        );
    }

    #[test]
    fn error_message_comes_from_json_then_reason_line() {
        let e = interpret(&response(
            500,
            "Internal",
            r#"{"data":null,"message":"VM 100 is not running\n"}"#,
        ))
        .unwrap_err();
        assert_eq!(e.message, "VM 100 is not running");
        assert_eq!(e.status, Some(500));
        let old = interpret(&response(
            403,
            "Permission check failed (/vms/100, VM.Audit)",
            "",
        ))
        .unwrap_err();
        assert_eq!(old.kind, ErrorKind::Forbidden);
    }

    #[test]
    fn parameter_errors_are_listed() {
        let body = r#"{"data":null,"errors":{"vmid":"value must be at least 100"},"message":"Parameter verification failed.\n"}"#;
        let e = interpret(&response(400, "Parameter verification failed.", body)).unwrap_err();
        assert_eq!(
            e.message,
            "Parameter verification failed. (vmid: value must be at least 100)"
        );
    }

    #[test]
    fn html_success_body_is_malformed() {
        let e = interpret(&response(200, "OK", "<html>proxy</html>")).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Malformed);
        assert!(e.message.contains("<html>proxy</html>"));
    }
}
