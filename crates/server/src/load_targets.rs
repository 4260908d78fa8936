//! Requests for any HTTP service: one URL with a method, headers and a body, or targets in
//! vegeta's HTTP format (`METHOD URL`, header lines, an optional `@FILE` body, blank lines
//! between targets).

use std::path::Path;

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use hyper::Method;

use crate::RawRequest;

/// Splits `http://host:port/path?query` into its base (`http://host:port`) and its path
/// and query (`/path?query`; `/` when empty).
pub fn split_url(url: &str) -> Result<(String, String), String> {
    let clip = tailor_core::clip;
    let Some(rest) = url.strip_prefix("http://") else {
        return Err(if url.starts_with("https://") {
            format!("{}: https is not supported; give an http:// URL", clip(url))
        } else {
            format!(
                "{}: expected an http:// URL, such as http://127.0.0.1:8080/",
                clip(url)
            )
        });
    };
    let cut = rest.find(['/', '?']).unwrap_or(rest.len());
    let (host, path) = rest.split_at(cut);
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err(format!("{}: expected a host after http://", clip(url)));
    }
    // A port, if given, is a number (IPv6 hosts come in brackets).
    let after_brackets = host.rsplit(']').next().unwrap_or(host);
    if let Some((_, port)) = after_brackets.rsplit_once(':') {
        if port.parse::<u16>().is_err() {
            return Err(format!(
                "{}: not a URL the client can send (the port `{}` is not a number from 0 to 65535)",
                clip(url),
                clip(port)
            ));
        }
    }
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_string(),
    };
    let base = format!("http://{host}");
    // What the client will send must parse: a bad port, a space or a fragment is refused
    // here, not counted as a failed request after the run.
    if path.contains('#') || format!("{base}{path}").parse::<hyper::Uri>().is_err() {
        return Err(format!(
            "{}: not a URL the client can send (check the port, and that the path has no \
             spaces or #fragment)",
            clip(url)
        ));
    }
    Ok((base, path))
}

/// Parses one `Name: value` header; `at` names where it came from in errors.
pub fn parse_header(line: &str, at: &str) -> Result<(HeaderName, HeaderValue), String> {
    let clip = tailor_core::clip;
    let (name, value) = line
        .split_once(':')
        .ok_or_else(|| format!("{at}: expected `Name: value`, found `{}`", clip(line)))?;
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| format!("{at}: bad header name `{}`", clip(name)))?;
    let value = HeaderValue::from_str(value.trim())
        .map_err(|_| format!("{at}: bad value for header {name}"))?;
    Ok((name, value))
}

impl RawRequest {
    /// One request to `url` (`http://host:port/path`): its base, and the request.
    /// `headers` are `Name: value` lines.
    pub fn to_url(
        url: &str,
        method: &str,
        headers: &[String],
        body: Vec<u8>,
    ) -> Result<(String, RawRequest), String> {
        let (base, path) = split_url(url)?;
        let method = Method::from_bytes(method.trim().to_ascii_uppercase().as_bytes())
            .map_err(|_| format!("bad method `{}`", tailor_core::clip(method)))?;
        let headers = headers
            .iter()
            .map(|h| parse_header(h, "--header"))
            .collect::<Result<_, _>>()?;
        Ok((
            base,
            RawRequest {
                method,
                path,
                body: Bytes::from(body),
                headers,
            },
        ))
    }

    /// Parses targets in vegeta's HTTP format from `text`, the contents of `file`:
    /// `METHOD URL`, then `Name: value` header lines, then an optional `@FILE` body (a
    /// relative path read from the working folder, as vegeta does); a line that starts
    /// with a method in capitals, or one after a blank line, opens the next target; `#`
    /// starts a comment line. Every URL must share one base, the host the connections
    /// go to.
    /// Errors name the file and line.
    pub fn parse_targets(text: &str, file: &Path) -> Result<(String, Vec<RawRequest>), String> {
        let clip = tailor_core::clip;
        let mut base: Option<String> = None;
        let mut out: Vec<RawRequest> = Vec::new();
        let mut open = false;
        for (i, line) in text.lines().enumerate() {
            let at = format!("{}:{}", file.display(), i + 1);
            let line = line.trim();
            if line.is_empty() {
                open = false;
                continue;
            }
            if line.starts_with('#') {
                continue;
            }
            // As vegeta: a line that starts with a method in capitals opens a target, so
            // targets need no blank line between them.
            let starts_target = line
                .split_once(char::is_whitespace)
                .is_some_and(|(m, _)| !m.is_empty() && m.bytes().all(|b| b.is_ascii_uppercase()));
            if !open || starts_target {
                let (method, url) = line.split_once(char::is_whitespace).ok_or_else(|| {
                    format!("{at}: expected `METHOD URL`, found `{}`", clip(line))
                })?;
                let (b, path) = split_url(url.trim()).map_err(|e| format!("{at}: {e}"))?;
                match &base {
                    Some(first) if *first != b => {
                        return Err(format!(
                            "{at}: every target must be on one host ({first}), found {b}"
                        ))
                    }
                    _ => base = Some(b),
                }
                let method = Method::from_bytes(method.as_bytes())
                    .map_err(|_| format!("{at}: bad method `{}`", clip(method)))?;
                out.push(RawRequest {
                    method,
                    path,
                    body: Bytes::new(),
                    headers: Vec::new(),
                });
                open = true;
            } else if let Some(body) = line.strip_prefix('@') {
                // As vegeta: a relative body path is read from the working folder.
                let path = Path::new(body.trim()).to_path_buf();
                let bytes = std::fs::read(&path)
                    .map_err(|e| format!("{at}: cannot read the body {}: {e}", path.display()))?;
                out.last_mut().expect("a target is open").body = Bytes::from(bytes);
            } else {
                let header = parse_header(line, &at)?;
                out.last_mut()
                    .expect("a target is open")
                    .headers
                    .push(header);
            }
        }
        let base = base.ok_or_else(|| format!("{}: no targets", file.display()))?;
        Ok((base, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_base_and_path() {
        assert_eq!(
            split_url("http://127.0.0.1:8080").unwrap(),
            ("http://127.0.0.1:8080".into(), "/".into())
        );
        assert_eq!(
            split_url("http://h:1/a/b?q=1").unwrap(),
            ("http://h:1".into(), "/a/b?q=1".into())
        );
        assert_eq!(split_url("http://h?x").unwrap().1, "/?x");
        assert!(split_url("https://h/").unwrap_err().contains("https"));
        assert!(split_url("ftp://h/").unwrap_err().contains("http://"));
        assert!(split_url("http:///x").unwrap_err().contains("host"));
        for bad in ["http://h:x/", "http://h:1/a b", "http://h:1/a#f"] {
            assert!(split_url(bad).unwrap_err().contains("not a URL"), "{bad}");
        }
    }

    #[test]
    fn targets_carry_method_headers_and_body_and_errors_name_the_line() {
        let dir = std::env::temp_dir().join(format!("tailor-targets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("b.json"), "{\"x\":1}").unwrap();
        let file = dir.join("t.txt");
        let text = format!(
            "# two targets, no blank line between them\nGET http://h:1/a\nX-A: 1\nPOST http://h:1/b?c=2\nContent-Type: text/plain\n@{}\n",
            dir.join("b.json").display()
        );
        let (base, reqs) = RawRequest::parse_targets(&text, &file).unwrap();
        assert_eq!(base, "http://h:1");
        assert_eq!(reqs.len(), 2);
        assert_eq!(
            (reqs[0].method.as_str(), reqs[0].path.as_str()),
            ("GET", "/a")
        );
        assert_eq!(reqs[0].headers[0].0.as_str(), "x-a");
        assert_eq!(
            (reqs[1].method.as_str(), reqs[1].path.as_str()),
            ("POST", "/b?c=2")
        );
        assert_eq!(&reqs[1].body[..], b"{\"x\":1}");
        let e =
            RawRequest::parse_targets("GET http://h:1/\n\nGET http://g:2/\n", &file).unwrap_err();
        assert!(e.contains("t.txt:3") && e.contains("one host"), "{e}");
        let e = RawRequest::parse_targets("GET http://h:1/\nnot a header\n", &file).unwrap_err();
        assert!(e.contains("t.txt:2") && e.contains("Name: value"), "{e}");
        let e = RawRequest::parse_targets("GET http://h:1/\n@missing\n", &file).unwrap_err();
        assert!(e.contains("t.txt:2") && e.contains("missing"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
