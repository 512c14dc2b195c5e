//! An HTTP receiver a test starts on 127.0.0.1: a webhook, or a forge's
//! API as `curl` posts to it. It answers each request with the next status
//! in `answers` (200 once they run out) and keeps each request it answered
//! 2xx: its first line, its headers and its body.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug)]
pub struct Request {
    /// "POST /repos/o/r/check-runs HTTP/1.1".
    pub line: String,
    /// Names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

pub struct Receiver {
    /// http://127.0.0.1:PORT
    pub base: String,
    pub answers: Arc<Mutex<Vec<u16>>>,
    taken: Arc<Mutex<Vec<Request>>>,
}

impl Receiver {
    pub fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let (answers, taken) = (Arc::new(Mutex::new(Vec::<u16>::new())), Arc::new(Mutex::new(Vec::new())));
        let (a, t) = (answers.clone(), taken.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let mut headers = Vec::new();
                loop {
                    let mut h = String::new();
                    reader.read_line(&mut h).unwrap();
                    match h.trim_end().split_once(':') {
                        Some((n, v)) => headers.push((n.to_ascii_lowercase(), v.trim().to_string())),
                        None => break,
                    }
                }
                let length = headers.iter().find(|(n, _)| n == "content-length").map_or(0, |(_, v)| v.parse().unwrap());
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let status = {
                    let mut a = a.lock().unwrap();
                    if a.is_empty() {
                        200
                    } else {
                        a.remove(0)
                    }
                };
                if status < 300 {
                    let body = String::from_utf8(body).unwrap();
                    t.lock().unwrap().push(Request { line: line.trim_end().to_string(), headers, body });
                }
                let mut conn = conn;
                let _ = write!(conn, "HTTP/1.1 {status} X\r\ncontent-length: 4\r\nconnection: close\r\n\r\nnope");
            }
        });
        Receiver { base, answers, taken }
    }

    /// The requests taken since the last call.
    pub fn taken(&self) -> Vec<Request> {
        std::mem::take(&mut *self.taken.lock().unwrap())
    }
}
