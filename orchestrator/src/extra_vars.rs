//! `-e` as Ansible reads it: `k=v k2=v2`, a YAML/JSON mapping, or `@file`.

use crate::inventory::Vars;
use crate::yaml;

pub fn parse(args: &[String]) -> Result<Vars, String> {
    let mut vars = Vars::new();
    for a in args {
        let a = a.trim();
        let node = if let Some(file) = a.strip_prefix('@') {
            Some(yaml::parse_file(std::path::Path::new(file)).map_err(|e| e.to_string())?)
        } else if a.starts_with('{') {
            Some(yaml::parse_str("-e", a).map_err(|e| e.to_string())?)
        } else {
            None
        };
        match node {
            Some(n) => match n.to_json() {
                serde_json::Value::Object(m) => vars.extend(m),
                _ => return Err(format!("-e {a}: expected a mapping of variables")),
            },
            None => {
                for word in shlex::split(a).ok_or_else(|| format!("-e {a}: unbalanced quotes"))? {
                    let (k, v) = word.split_once('=').ok_or_else(|| format!("-e {a}: `{word}` is not key=value"))?;
                    // key=value values are strings, as in Ansible.
                    vars.insert(k.to_string(), serde_json::Value::String(v.to_string()));
                }
            }
        }
    }
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn forms() {
        let v = parse(&["size=16M reps=2".into(), "{fss: [ext4]}".into(), "x='a b'".into()]).unwrap();
        assert_eq!(v["size"], json!("16M"));
        assert_eq!(v["reps"], json!("2"));
        assert_eq!(v["fss"], json!(["ext4"]));
        assert_eq!(v["x"], json!("a b"));
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), "n: 3\n").unwrap();
        assert_eq!(parse(&[format!("@{}", f.path().display())]).unwrap()["n"], json!(3));
        assert!(parse(&["novalue".into()]).is_err());
    }
}
