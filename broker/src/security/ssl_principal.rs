//! The principal of a TLS client certificate, as Kafka names it: the subject's distinguished
//! name in RFC 2253 form (Java's `X500Principal.getName()`: most specific RDN first, keywords
//! CN, C, L, ST, O, OU, STREET, DC, UID, other attributes as `OID=#hex`), then mapped by
//! `ssl.principal.mapping.rules`:
//!
//! ```text
//! RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT
//! ```
//!
//! Each `RULE:pattern/replacement/[L|U]` must match the whole name; the first that does names
//! the principal (`$1` its groups; `L`/`U` lower or upper case); `DEFAULT` is the name as is.
//! When no rule applies the connection is refused, as in Kafka.

use regex::Regex;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::KafkaPrincipal;

/// `ssl.principal.mapping.rules`, parsed.
#[derive(Debug, Clone)]
pub struct SslPrincipalMapper {
    rules: Vec<Rule>,
    text: String,
}

#[derive(Debug, Clone)]
enum Rule {
    Default,
    Pattern {
        pattern: Regex,
        replacement: String,
        case: Case,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

impl SslPrincipalMapper {
    pub fn parse(text: &str) -> Result<SslPrincipalMapper, String> {
        let mut rules = Vec::new();
        let mut rest = text;
        loop {
            rest = rest.trim_start_matches([' ', '\t', '\n', '\r']);
            if rest.is_empty() {
                break;
            }
            let (rule, after) = parse_rule(rest)?;
            rules.push(rule);
            rest = match after.find([',', '\n']) {
                Some(at) => &after[at + 1..],
                None => "",
            };
        }
        if rules.is_empty() {
            return Err("no rule (DEFAULT, or RULE:pattern/replacement/[LU])".into());
        }
        Ok(SslPrincipalMapper {
            rules,
            text: text.to_string(),
        })
    }

    /// The principal a DER client certificate names: `User:<mapped subject>`.
    pub fn principal(&self, certificate_der: &[u8]) -> Result<KafkaPrincipal, String> {
        let subject = subject_name(certificate_der)?;
        self.name(&subject).map(KafkaPrincipal::user)
    }

    /// The principal name of `distinguished_name`, or why none applies.
    pub fn name(&self, distinguished_name: &str) -> Result<String, String> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Ok(distinguished_name.to_string()),
                Rule::Pattern {
                    pattern,
                    replacement,
                    case,
                } => {
                    let Some(captures) = pattern.captures(distinguished_name) else {
                        continue;
                    };
                    let whole = captures.get(0).map(|m| m.as_str().len());
                    if whole != Some(distinguished_name.len()) {
                        continue;
                    }
                    let mut name = String::new();
                    captures.expand(replacement, &mut name);
                    return Ok(match case {
                        Case::Keep => name,
                        Case::Lower => name.to_lowercase(),
                        Case::Upper => name.to_uppercase(),
                    });
                }
            }
        }
        Err(format!(
            "No rules apply to {distinguished_name}, rules {}",
            self.text
        ))
    }
}

/// One rule at the start of `text`, and what follows it.
fn parse_rule(text: &str) -> Result<(Rule, &str), String> {
    if let Some(after) = text.strip_prefix("DEFAULT") {
        return Ok((Rule::Default, after));
    }
    let Some(body) = text.strip_prefix("RULE:") else {
        return Err(format!(
            "{text:?} is neither DEFAULT nor RULE:pattern/replacement/[LU]"
        ));
    };
    let (pattern, after) =
        until_slash(body).ok_or_else(|| format!("rule {text:?} has no replacement"))?;
    let (replacement, after) =
        until_slash(after).ok_or_else(|| format!("rule {text:?} does not end with '/'"))?;
    let (case, after) = match after.chars().next() {
        Some('L') => (Case::Lower, &after[1..]),
        Some('U') => (Case::Upper, &after[1..]),
        _ => (Case::Keep, after),
    };
    let pattern = Regex::new(&pattern).map_err(|e| format!("rule {text:?}: {e}"))?;
    Ok((
        Rule::Pattern {
            pattern,
            replacement: java_replacement(&replacement),
            case,
        },
        after,
    ))
}

/// The text up to the first unescaped `/` (escapes kept, so the pattern sees them), and the
/// rest after it.
fn until_slash(text: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '/' => return Some((out, &text[at + 1..])),
            '\\' => {
                out.push(c);
                if let Some((_, next)) = chars.next() {
                    out.push(next);
                }
            }
            _ => out.push(c),
        }
    }
    None
}

/// A Java `replaceAll` replacement (`$1`, `\x` a literal x) in `regex`'s expansion syntax.
fn java_replacement(java: &str) -> String {
    let mut out = String::new();
    let mut chars = java.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('$') => out.push_str("$$"),
                Some(other) => out.push(other),
                None => {}
            },
            '$' => {
                let mut group = String::new();
                while let Some(digit) = chars.next_if(|d| d.is_ascii_digit()) {
                    group.push(digit);
                }
                match group.is_empty() {
                    true => out.push_str("$$"),
                    false => out.push_str(&format!("${{{group}}}")),
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The RFC 2253 subject of a DER certificate, as Java prints it.
pub fn subject_name(certificate_der: &[u8]) -> Result<String, String> {
    let (_, certificate) = X509Certificate::from_der(certificate_der)
        .map_err(|e| format!("the client certificate does not parse: {e}"))?;
    let mut rdns = Vec::new();
    for rdn in certificate.subject().iter_rdn() {
        let mut values = Vec::new();
        for attribute in rdn.iter() {
            let oid = attribute.attr_type().to_id_string();
            let value = match (keyword(&oid), attribute.as_str()) {
                (Some(keyword), Ok(text)) => format!("{keyword}={}", escape(text)),
                _ => {
                    use x509_parser::der_parser::asn1_rs::ToDer;
                    let der = attribute
                        .attr_value()
                        .to_der_vec()
                        .map_err(|e| format!("an attribute of the subject does not encode: {e}"))?;
                    let hex: String = der.iter().map(|b| format!("{b:02x}")).collect();
                    format!("{oid}=#{hex}")
                }
            };
            values.push(value);
        }
        rdns.push(values.join("+"));
    }
    rdns.reverse();
    Ok(rdns.join(","))
}

/// RFC 2253's keywords, as Java uses them.
fn keyword(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.9" => "STREET",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

/// RFC 2253 escaping: `,+"\<>;` anywhere, `#` or a space first, a space last.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (index, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (index == 0 && (c == '#' || c == ' '))
            || (index == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_documented_rules() {
        let mapper = SslPrincipalMapper::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, DEFAULT",
        )
        .unwrap();
        assert_eq!(
            mapper
                .name("CN=kafka-server1,OU=ServiceUsers,O=Weir")
                .unwrap(),
            "kafka-server1"
        );
        assert_eq!(
            mapper
                .name("CN=Adam,OU=Users,O=Weir,L=Oslo,ST=Oslo,C=NO")
                .unwrap(),
            "adam@users"
        );
        assert_eq!(mapper.name("CN=other").unwrap(), "CN=other");
        let upper = SslPrincipalMapper::parse("RULE:^CN=([a-z]+)$/$1x/U").unwrap();
        assert_eq!(upper.name("CN=app").unwrap(), "APPX");
        let no_default = SslPrincipalMapper::parse("RULE:^CN=(.*)$/$1/").unwrap();
        assert!(no_default
            .name("OU=x")
            .unwrap_err()
            .contains("No rules apply"));
    }

    #[test]
    fn bad_rules_are_refused() {
        for rules in [
            "",
            "RULE:^CN=(.*)$",
            "RULE:^CN=(.*)$/$1",
            "RULE:(/x/",
            "SOMETHING",
        ] {
            assert!(
                SslPrincipalMapper::parse(rules).is_err(),
                "{rules:?} accepted"
            );
        }
    }

    #[test]
    fn subjects_print_as_java_prints_them() {
        let subject = |attributes: &[(rcgen::DnType, &str)]| {
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params.distinguished_name = rcgen::DistinguishedName::new();
            for (kind, value) in attributes {
                params.distinguished_name.push(kind.clone(), *value);
            }
            let key = rcgen::KeyPair::generate().unwrap();
            subject_name(params.self_signed(&key).unwrap().der()).unwrap()
        };
        // Most specific (last encoded) first; RFC 2253 escapes.
        let name = subject(&[
            (rcgen::DnType::CountryName, "NO"),
            (rcgen::DnType::OrganizationName, "Weir, Inc"),
            (rcgen::DnType::OrganizationalUnitName, "Service Users"),
        ]);
        assert_eq!(name, "OU=Service Users,O=Weir\\, Inc,C=NO");
        assert_eq!(subject(&[(rcgen::DnType::CommonName, "app-1")]), "CN=app-1");
        assert!(subject_name(b"not a certificate").is_err());
        assert_eq!(escape(" #a "), "\\ #a\\ ");
    }
}
