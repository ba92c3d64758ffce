//! OpenQASM 2 circuits, so that users can time their own: `qreg`s, the
//! gates of `qelib1.inc` and the file's own `gate` definitions, expanded
//! into the gates a register runs. `measure` and `barrier` are skipped (the
//! register runs the unitary part); `creg` is accepted; anything else, an
//! unknown gate or a qubit out of range is one line naming the file and
//! line, exit 2. A global phase (rz's e^{-iθ/2}) is dropped: it changes no
//! measurement, and a mirrored circuit undoes it anyway. What a hostile
//! file could make explode is bounded: an expression's length (so that
//! neither parsing nor evaluating it recurses deeply), the nesting of gate
//! definitions, the gates they expand to (the cap random circuits have),
//! register sizes and indices, and every angle is finite.

use super::circuit::{Circuit, Gate, MOST_GATES, hadamard, is_h};
use super::state::ProductState;
use crate::error::{Error, Result};
use num_complex::Complex64;
use std::collections::HashMap;
use std::f64::consts::PI;
use std::path::Path;
use std::rc::Rc;

/// The most tokens one parameter's expression may hold: an angle is a few
/// (`-(phi+lambda)/2` is 8), and the parser and its evaluation recurse at
/// most this deep, however the tokens nest or chain.
const EXPR_TOKENS: usize = 256;

/// The deepest gate definitions may call one another.
const DEFINITION_DEPTH: usize = 64;

/// The most qubits a file's registers may hold in all (2^60 amplitudes).
const MOST_QUBITS: u64 = 60;

/// qelib1.inc's gates that are not built in, as the standard library
/// defines them (OpenQASM 2.0, arXiv:1707.03429, its appendix).
const QELIB1: &str = "
gate cy a,b { sdg b; cx a,b; s b; }
gate ch a,b { h b; sdg b; cx a,b; h b; t b; cx a,b; t b; h b; s b; x b; s a; }
gate ccx a,b,c { h c; cx b,c; tdg c; cx a,c; t c; cx b,c; tdg c; cx a,c; t b; t c; h c; cx a,b; t a; tdg b; cx a,b; }
gate crz(lambda) a,b { u1(lambda/2) b; cx a,b; u1(-lambda/2) b; cx a,b; }
gate crx(lambda) a,b { u1(pi/2) b; cx a,b; u3(-lambda/2,0,0) b; cx a,b; u3(lambda/2,-pi/2,0) b; }
gate cry(lambda) a,b { u3(lambda/2,0,0) b; cx a,b; u3(-lambda/2,0,0) b; cx a,b; }
gate cu3(theta,phi,lambda) c,t { u1((lambda+phi)/2) c; u1((lambda-phi)/2) t; cx c,t; u3(-theta/2,0,-(phi+lambda)/2) t; cx c,t; u3(theta/2,phi,0) t; }
gate cswap a,b,c { cx c,b; ccx a,b,c; cx c,b; }
gate rzz(theta) a,b { cx a,b; u1(theta) b; cx a,b; }
gate rxx(theta) a,b { u3(pi/2,theta,0) a; h b; cx a,b; u1(-theta) b; cx a,b; h b; u2(-pi,pi-theta) a; }
";

/// Reads an OpenQASM 2 file (a regular file, at most
/// [`CIRCUIT_BYTES`](crate::input::CIRCUIT_BYTES)).
pub fn read(path: &Path) -> Result<Circuit> {
    read_noting(path).map(|(c, _)| c)
}

/// [`read`], and a line saying what the file holds that the register does
/// not run (`measure`, `barrier`), None when nothing was skipped.
pub fn read_noting(path: &Path) -> Result<(Circuit, Option<String>)> {
    let name = path.display().to_string();
    let text = crate::input::read(path, &name, crate::input::CIRCUIT_BYTES)?;
    parse_noting(&text, &name)
}

/// A gate a file defines: its parameters, its qubit arguments and its body.
#[derive(Debug, Clone)]
struct Definition {
    params: Vec<String>,
    args: Vec<String>,
    body: Vec<Statement>,
}

/// One gate application: `name(params) args;`.
#[derive(Debug, Clone)]
struct Statement {
    name: String,
    params: Vec<Expr>,
    args: Vec<Arg>,
    line: usize,
}

#[derive(Debug, Clone)]
enum Arg {
    /// `q[i]`, or `q` (a whole register; inside a definition, an argument).
    Bit(String, Option<u64>),
}

#[derive(Debug, Clone)]
enum Expr {
    Num(f64),
    Var(String),
    Neg(Box<Expr>),
    Bin(char, Box<Expr>, Box<Expr>),
    Call(String, Box<Expr>),
}

impl Expr {
    fn eval(&self, vars: &HashMap<String, f64>) -> std::result::Result<f64, String> {
        Ok(match self {
            Expr::Num(x) => *x,
            Expr::Var(v) if v == "pi" => PI,
            Expr::Var(v) => *vars.get(v).ok_or_else(|| format!("unknown parameter '{v}'"))?,
            Expr::Neg(e) => -e.eval(vars)?,
            Expr::Bin(op, a, b) => {
                let (a, b) = (a.eval(vars)?, b.eval(vars)?);
                match op {
                    '+' => a + b,
                    '-' => a - b,
                    '*' => a * b,
                    '/' => a / b,
                    _ => a.powf(b),
                }
            }
            Expr::Call(f, e) => {
                let x = e.eval(vars)?;
                match f.as_str() {
                    "sin" => x.sin(),
                    "cos" => x.cos(),
                    "tan" => x.tan(),
                    "exp" => x.exp(),
                    "ln" => x.ln(),
                    "sqrt" => x.sqrt(),
                    _ => return Err(format!("unknown function '{f}'")),
                }
            }
        })
    }
}

/// The tokens of a file, each with its line.
fn tokens(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split("//").next().unwrap_or("");
        let mut chars = line.chars().peekable();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() {
                chars.next();
            } else if c.is_ascii_alphabetic() || c == '_' {
                let mut w = String::new();
                while let Some(&c) = chars.peek().filter(|c| c.is_ascii_alphanumeric() || **c == '_') {
                    w.push(c);
                    chars.next();
                }
                out.push((w, n + 1));
            } else if c.is_ascii_digit() || c == '.' {
                let mut w = String::new();
                while let Some(&c) = chars.peek() {
                    let exponent_sign = (c == '-' || c == '+') && w.ends_with(['e', 'E']);
                    if !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || exponent_sign) {
                        break;
                    }
                    w.push(c);
                    chars.next();
                }
                out.push((w, n + 1));
            } else if c == '"' {
                let mut w = String::from('"');
                chars.next();
                for c in chars.by_ref() {
                    w.push(c);
                    if c == '"' {
                        break;
                    }
                }
                out.push((w, n + 1));
            } else {
                chars.next();
                if c == '-' && chars.peek() == Some(&'>') {
                    chars.next();
                    out.push(("->".into(), n + 1));
                } else if c == '=' && chars.peek() == Some(&'=') {
                    chars.next();
                    out.push(("==".into(), n + 1));
                } else {
                    out.push((c.to_string(), n + 1));
                }
            }
        }
    }
    out
}

struct Parser<'a> {
    toks: Vec<(String, usize)>,
    at: usize,
    file: &'a str,
    /// Where the parameter being read began, for [`EXPR_TOKENS`].
    expr_start: usize,
}

/// A token as an error quotes it: a long one cut short.
fn shown(t: &str) -> String {
    crate::input::excerpt(t, crate::input::EXCERPT_CHARS)
}

impl Parser<'_> {
    fn line(&self) -> usize {
        self.toks.get(self.at).or(self.toks.last()).map_or(1, |t| t.1)
    }

    fn err(&self, what: impl std::fmt::Display) -> Error {
        Error::Usage(format!("{}:{}: {what}", self.file, self.line()))
    }

    fn peek(&self) -> Option<&str> {
        self.toks.get(self.at).map(|t| t.0.as_str())
    }

    fn next(&mut self) -> Result<String> {
        let t = self.toks.get(self.at).map(|t| t.0.clone()).ok_or_else(|| self.err("unexpected end of file"))?;
        self.at += 1;
        Ok(t)
    }

    fn expect(&mut self, want: &str) -> Result<()> {
        let got = self.next()?;
        if got != want {
            self.at -= 1;
            return Err(self.err(format!("expected '{want}', found '{}'", shown(&got))));
        }
        Ok(())
    }

    fn name(&mut self) -> Result<String> {
        let w = self.next()?;
        if !w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            self.at -= 1;
            return Err(self.err(format!("expected a name, found '{}'", shown(&w))));
        }
        Ok(w)
    }

    /// An index or a size: any u64 (checked against what it indexes by the caller).
    fn index(&mut self) -> Result<u64> {
        let w = self.next()?;
        w.parse().map_err(|_| {
            self.at -= 1;
            match w.bytes().all(|b| b.is_ascii_digit()) {
                true => self.err(format!("the index {} is past any register", shown(&w))),
                false => self.err(format!("expected an index, found '{}'", shown(&w))),
            }
        })
    }

    /// A comma-separated list up to `end`, each item read by `item`.
    fn list<T>(&mut self, end: &str, mut item: impl FnMut(&mut Self) -> Result<T>) -> Result<Vec<T>> {
        let mut out = Vec::new();
        if self.peek() == Some(end) {
            self.next()?;
            return Ok(out);
        }
        loop {
            out.push(item(self)?);
            let sep = self.next()?;
            if sep == end {
                return Ok(out);
            }
            if sep != "," {
                self.at -= 1;
                return Err(self.err(format!("expected ',' or '{end}', found '{}'", shown(&sep))));
            }
        }
    }

    /// A gate's parameter: an expression of at most [`EXPR_TOKENS`] tokens.
    fn parameter(&mut self) -> Result<Expr> {
        self.expr_start = self.at;
        self.expr()
    }

    fn expr(&mut self) -> Result<Expr> {
        let mut e = self.term()?;
        while let Some(op) = self.peek().filter(|p| *p == "+" || *p == "-").map(|p| p.chars().next().unwrap_or('+')) {
            self.next()?;
            e = Expr::Bin(op, Box::new(e), Box::new(self.term()?));
        }
        Ok(e)
    }

    fn term(&mut self) -> Result<Expr> {
        let mut e = self.power()?;
        while let Some(op) = self.peek().filter(|p| *p == "*" || *p == "/").map(|p| p.chars().next().unwrap_or('*')) {
            self.next()?;
            e = Expr::Bin(op, Box::new(e), Box::new(self.power()?));
        }
        Ok(e)
    }

    fn power(&mut self) -> Result<Expr> {
        let base = self.atom()?;
        if self.peek() == Some("^") {
            self.next()?;
            return Ok(Expr::Bin('^', Box::new(base), Box::new(self.power()?)));
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<Expr> {
        // Every recursion of the parser passes here having read a token
        // more, so this bounds its depth (and the tree's) too.
        if self.at - self.expr_start >= EXPR_TOKENS {
            return Err(self.err(format!(
                "an expression of more than {EXPR_TOKENS} tokens (nested or chained): an angle needs far fewer"
            )));
        }
        let t = self.next()?;
        if t == "-" {
            return Ok(Expr::Neg(Box::new(self.atom()?)));
        }
        if t == "+" {
            return self.atom();
        }
        if t == "(" {
            let e = self.expr()?;
            self.expect(")")?;
            return Ok(e);
        }
        if let Ok(x) = t.parse::<f64>()
            && t.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        {
            return Ok(Expr::Num(x));
        }
        if t.starts_with(|c: char| c.is_ascii_alphabetic()) {
            if self.peek() == Some("(") {
                self.next()?;
                let e = self.expr()?;
                self.expect(")")?;
                return Ok(Expr::Call(t, Box::new(e)));
            }
            return Ok(Expr::Var(t));
        }
        self.at -= 1;
        Err(self.err(format!("expected an expression, found '{}'", shown(&t))))
    }

    fn arg(&mut self) -> Result<Arg> {
        let name = self.name()?;
        if self.peek() == Some("[") {
            self.next()?;
            let i = self.index()?;
            self.expect("]")?;
            return Ok(Arg::Bit(name, Some(i)));
        }
        Ok(Arg::Bit(name, None))
    }

    /// `name(params) args;` with the name read already.
    fn statement(&mut self, name: String) -> Result<Statement> {
        let line = self.toks[self.at - 1].1;
        let params = if self.peek() == Some("(") {
            self.next()?;
            self.list(")", Self::parameter)?
        } else {
            Vec::new()
        };
        let args = self.list(";", Self::arg)?;
        Ok(Statement { name, params, args, line })
    }

    /// Skips to the end of the statement.
    fn skip(&mut self) -> Result<()> {
        while self.next()? != ";" {}
        Ok(())
    }
}

/// What the file declares and applies.
struct Program<'a> {
    file: &'a str,
    /// Each qreg: its name, its first qubit and its size.
    regs: Vec<(String, u32, u32)>,
    /// Every register's name, qreg or creg, to refuse one declared twice.
    names: Vec<String>,
    defs: HashMap<String, Rc<Definition>>,
    gates: Vec<Gate>,
    /// Built-in gates applied so far, identities included, against [`MOST_GATES`].
    applied: usize,
    /// The line of the file's statement being applied, which the gate cap names.
    top_line: usize,
    /// The `measure` and `barrier` statements skipped.
    measures: usize,
    barriers: usize,
}

impl Program<'_> {
    fn err(&self, line: usize, what: impl std::fmt::Display) -> Error {
        Error::Usage(format!("{}:{line}: {what}", self.file))
    }

    fn new(file: &str, defs: HashMap<String, Rc<Definition>>) -> Program<'_> {
        Program { file, regs: Vec::new(), names: Vec::new(), defs, gates: Vec::new(), applied: 0, top_line: 0, measures: 0, barriers: 0 }
    }

    fn qubits(&self) -> u32 {
        self.regs.iter().map(|r| r.2).sum()
    }

    /// Declares `qreg name[size]` (or a creg): a name declared before, a
    /// qreg of no qubits or registers past [`MOST_QUBITS`] in all are refused.
    fn declare(&mut self, quantum: bool, name: String, size: u64, line: usize) -> Result<()> {
        if self.names.contains(&name) {
            return Err(self.err(line, format!("a register named '{name}' is declared already")));
        }
        if quantum {
            let all = self.qubits() as u64 + size;
            if size == 0 {
                return Err(self.err(line, format!("qreg {name}[0] holds no qubit")));
            }
            if size > MOST_QUBITS || all > MOST_QUBITS {
                return Err(self.err(
                    line,
                    format!("qreg {name}[{size}] makes {all} qubits in all, past any machine (at most {MOST_QUBITS})"),
                ));
            }
            self.regs.push((name.clone(), self.qubits(), size as u32));
        }
        self.names.push(name);
        Ok(())
    }

    /// Defines a gate: one that is built in or defined already is refused,
    /// and so is a body that applies a gate not defined before it.
    fn define(&mut self, name: String, d: Definition, line: usize) -> Result<()> {
        if builtin(&name).is_some() || self.defs.contains_key(&name) {
            return Err(self.err(
                line,
                format!("gate '{name}' is defined already (built in, by qelib1.inc or above): give it another name"),
            ));
        }
        if let Some(s) = d.body.iter().find(|s| builtin(&s.name).is_none() && !self.defs.contains_key(&s.name)) {
            return Err(self.err(s.line, format!("unknown gate '{}' in the definition of '{name}'", s.name)));
        }
        self.defs.insert(name, Rc::new(d));
        Ok(())
    }

    /// The qubits an argument names at top level: one, or a whole register.
    fn resolve(&self, a: &Arg, line: usize) -> Result<Vec<u32>> {
        let Arg::Bit(name, index) = a;
        let (_, first, size) =
            self.regs.iter().find(|r| &r.0 == name).ok_or_else(|| self.err(line, format!("no qreg named '{name}'")))?;
        match *index {
            Some(i) if i < *size as u64 => Ok(vec![first + i as u32]),
            Some(i) => Err(self.err(line, format!("qubit {name}[{i}] is out of range: {name} has {size}"))),
            None => Ok((0..*size).map(|i| first + i).collect()),
        }
    }

    /// Applies a statement of the file itself: a register as an argument
    /// applies the gate to each of its qubits in turn.
    fn apply_top(&mut self, s: &Statement) -> Result<()> {
        let sets: Vec<Vec<u32>> = s.args.iter().map(|a| self.resolve(a, s.line)).collect::<Result<_>>()?;
        let width = sets.iter().map(Vec::len).max().unwrap_or(0);
        if sets.iter().any(|q| q.len() != 1 && q.len() != width) {
            return Err(self.err(s.line, "registers of different sizes in one statement"));
        }
        self.top_line = s.line;
        for i in 0..width {
            let qs: Vec<u32> = sets.iter().map(|q| if q.len() == 1 { q[0] } else { q[i] }).collect();
            self.apply(s, &qs, &HashMap::new(), 0)?;
        }
        Ok(())
    }

    /// The values of `s`'s parameters, each finite.
    fn values(&self, s: &Statement, vars: &HashMap<String, f64>) -> Result<Vec<f64>> {
        let mut out = Vec::with_capacity(s.params.len());
        for (k, e) in s.params.iter().enumerate() {
            let x = e.eval(vars).map_err(|why| self.err(s.line, why))?;
            if !x.is_finite() {
                let what = if x.is_nan() { "not a number" } else { "infinite" };
                return Err(self.err(s.line, format!("parameter {} of '{}' is {what}: give a finite angle", k + 1, s.name)));
            }
            out.push(x);
        }
        Ok(out)
    }

    /// Applies `s` with its arguments bound to qubits and its parameters to values.
    fn apply(&mut self, s: &Statement, qubits: &[u32], vars: &HashMap<String, f64>, depth: usize) -> Result<()> {
        let params = self.values(s, vars)?;
        if let Some(b) = builtin(&s.name) {
            self.takes(s, &params, qubits, b.params.unwrap_or(params.len()), b.qubits)?;
            self.applied += 1;
            if self.applied > MOST_GATES {
                return Err(self.err(
                    self.top_line,
                    format!("the circuit expands to more than {MOST_GATES} gates, the most a circuit may have"),
                ));
            }
            self.gates.extend((b.make)(&params, qubits));
            return Ok(());
        }
        let Some(d) = self.defs.get(&s.name).cloned() else {
            return Err(self.err(s.line, format!("unknown gate '{}'", s.name)));
        };
        self.takes(s, &params, qubits, d.params.len(), d.args.len())?;
        if depth >= DEFINITION_DEPTH {
            return Err(self.err(
                self.top_line,
                format!("gate definitions nest more than {DEFINITION_DEPTH} deep ('{}' at line {})", s.name, s.line),
            ));
        }
        let inner: HashMap<String, f64> = d.params.iter().cloned().zip(params).collect();
        let bound: HashMap<&str, u32> = d.args.iter().map(String::as_str).zip(qubits.iter().copied()).collect();
        for b in &d.body {
            let qs = b
                .args
                .iter()
                .map(|Arg::Bit(a, i)| match (bound.get(a.as_str()), i) {
                    (Some(&q), None) => Ok(q),
                    _ => Err(self.err(b.line, format!("'{a}' is not an argument of gate '{}'", s.name))),
                })
                .collect::<Result<Vec<u32>>>()?;
            self.apply(b, &qs, &inner, depth + 1)?;
        }
        Ok(())
    }

    /// Checks that `s` gives `p` parameters and `q` distinct qubits.
    fn takes(&self, s: &Statement, params: &[f64], qubits: &[u32], p: usize, q: usize) -> Result<()> {
        if params.len() != p || qubits.len() != q {
            return Err(self.err(
                s.line,
                format!(
                    "'{}' takes {p} parameter{} and {q} qubit{}, not {} and {}",
                    s.name,
                    if p == 1 { "" } else { "s" },
                    if q == 1 { "" } else { "s" },
                    params.len(),
                    qubits.len()
                ),
            ));
        }
        let mut sorted = qubits.to_vec();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            return Err(self.err(s.line, format!("'{}' names a qubit twice", s.name)));
        }
        Ok(())
    }
}

/// A gate OpenQASM 2 builds in (or qelib1.inc defines as one of the
/// register's gates): its names, its parameters (None: any, ignored) and
/// qubits, and the gate it makes of them (None: the identity).
struct Builtin {
    names: &'static [&'static str],
    params: Option<usize>,
    qubits: usize,
    make: fn(&[f64], &[u32]) -> Option<Gate>,
}

/// The built-in gate named `name`.
fn builtin(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.names.contains(&name))
}

const BUILTINS: &[Builtin] = &[
    Builtin { names: &["id", "u0"], params: None, qubits: 1, make: |_, _| None },
    Builtin { names: &["h"], params: Some(0), qubits: 1, make: |_, q| Some(Gate::H(q[0])) },
    Builtin { names: &["x"], params: Some(0), qubits: 1, make: |_, q| Some(Gate::U { q: q[0], m: u3(PI, 0.0, PI) }) },
    Builtin {
        names: &["y"],
        params: Some(0),
        qubits: 1,
        make: |_, q| {
            let i = Complex64::new(0.0, 1.0);
            Some(Gate::U { q: q[0], m: [0.0.into(), -i, i, 0.0.into()] })
        },
    },
    Builtin { names: &["z"], params: Some(0), qubits: 1, make: |_, q| Some(phase(vec![q[0]], PI)) },
    Builtin { names: &["s"], params: Some(0), qubits: 1, make: |_, q| Some(phase(vec![q[0]], PI / 2.0)) },
    Builtin { names: &["sdg"], params: Some(0), qubits: 1, make: |_, q| Some(phase(vec![q[0]], -PI / 2.0)) },
    Builtin { names: &["t"], params: Some(0), qubits: 1, make: |_, q| Some(phase(vec![q[0]], PI / 4.0)) },
    Builtin { names: &["tdg"], params: Some(0), qubits: 1, make: |_, q| Some(phase(vec![q[0]], -PI / 4.0)) },
    Builtin { names: &["u1", "p", "rz"], params: Some(1), qubits: 1, make: |p, q| Some(phase(vec![q[0]], p[0])) },
    Builtin {
        names: &["u2"],
        params: Some(2),
        qubits: 1,
        make: |p, q| Some(Gate::U { q: q[0], m: u3(PI / 2.0, p[0], p[1]) }),
    },
    Builtin {
        names: &["u3", "u", "U"],
        params: Some(3),
        qubits: 1,
        make: |p, q| Some(Gate::U { q: q[0], m: u3(p[0], p[1], p[2]) }),
    },
    Builtin {
        names: &["rx"],
        params: Some(1),
        qubits: 1,
        make: |p, q| Some(Gate::U { q: q[0], m: u3(p[0], -PI / 2.0, PI / 2.0) }),
    },
    Builtin {
        names: &["ry"],
        params: Some(1),
        qubits: 1,
        make: |p, q| Some(Gate::U { q: q[0], m: u3(p[0], 0.0, 0.0) }),
    },
    Builtin {
        names: &["sx"],
        params: Some(0),
        qubits: 1,
        make: |_, q| Some(Gate::U { q: q[0], m: [HALF_PLUS, HALF_MINUS, HALF_MINUS, HALF_PLUS] }),
    },
    Builtin {
        names: &["sxdg"],
        params: Some(0),
        qubits: 1,
        make: |_, q| Some(Gate::U { q: q[0], m: [HALF_MINUS, HALF_PLUS, HALF_PLUS, HALF_MINUS] }),
    },
    Builtin { names: &["cx", "CX"], params: Some(0), qubits: 2, make: |_, q| Some(Gate::Cx { c: q[0], t: q[1] }) },
    Builtin { names: &["cz"], params: Some(0), qubits: 2, make: |_, q| Some(phase(q.to_vec(), PI)) },
    Builtin { names: &["cu1", "cp"], params: Some(1), qubits: 2, make: |p, q| Some(phase(q.to_vec(), p[0])) },
    Builtin { names: &["swap"], params: Some(0), qubits: 2, make: |_, q| Some(Gate::Swap(q[0], q[1])) },
];

/// (1 ± i)/2, the entries of √X.
const HALF_PLUS: Complex64 = Complex64::new(0.5, 0.5);
const HALF_MINUS: Complex64 = Complex64::new(0.5, -0.5);

/// The phase e^{i·angle} on the amplitudes whose `qubits` are all 1.
fn phase(qubits: Vec<u32>, angle: f64) -> Gate {
    Gate::Phase { qubits, phase: Complex64::from_polar(1.0, angle) }
}

/// U(θ, φ, λ) of OpenQASM 2, up to its global phase.
fn u3(theta: f64, phi: f64, lambda: f64) -> [Complex64; 4] {
    let (c, s) = ((theta / 2.0).cos(), (theta / 2.0).sin());
    let e = |a: f64| Complex64::from_polar(1.0, a);
    let m = [Complex64::new(c, 0.0), -e(lambda) * s, e(phi) * s, e(phi + lambda) * c];
    // H as OpenQASM writes it, u2(0, π), is H itself: keep its fast kernels.
    if is_h(&m) {
        return hadamard();
    }
    m
}

/// Parses OpenQASM 2 text; `file` names it in errors.
#[cfg(test)]
fn parse(text: &str, file: &str) -> Result<Circuit> {
    parse_noting(text, file).map(|(c, _)| c)
}

/// Parses OpenQASM 2 text, and says what it skipped (see [`read_noting`]).
fn parse_noting(text: &str, file: &str) -> Result<(Circuit, Option<String>)> {
    let mut library = Program::new("qelib1.inc", HashMap::new());
    parse_into(QELIB1, &mut library, false)?;
    let mut prog = Program::new(file, library.defs);
    parse_into(text, &mut prog, true)?;
    let n = prog.qubits();
    if n == 0 {
        return Err(Error::Usage(format!("{file}: no qreg: the circuit has no qubits")));
    }
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let skipped = match (prog.measures, prog.barriers) {
        (0, 0) => None,
        (m, 0) => Some(plural(m, "measure")),
        (0, b) => Some(plural(b, "barrier")),
        (m, b) => Some(format!("{} and {}", plural(m, "measure"), plural(b, "barrier"))),
    };
    let note = skipped.map(|s| format!("{file}: {s} skipped: the register runs the circuit's unitary part"));
    let circuit = Circuit { name: file.into(), qubits: n, gates: prog.gates, start: ProductState::new(n), end: None };
    Ok((circuit, note))
}

/// Reads the definitions of `text` into `prog`, and where `applies` (a
/// circuit, not the library) its registers and gates too.
fn parse_into(text: &str, prog: &mut Program, applies: bool) -> Result<()> {
    let mut p = Parser { toks: tokens(text), at: 0, file: prog.file, expr_start: 0 };
    while let Some(t) = p.peek().map(str::to_string) {
        p.next()?;
        match t.as_str() {
            "OPENQASM" => {
                let v = p.next()?;
                if !v.starts_with('2') {
                    return Err(p.err(format!("OpenQASM {v}: qbench reads OpenQASM 2")));
                }
                p.expect(";")?;
            }
            "include" => {
                let f = p.next()?;
                if f != "\"qelib1.inc\"" {
                    return Err(p.err(format!("include {f}: only qelib1.inc is known")));
                }
                p.expect(";")?;
            }
            "qreg" | "creg" => {
                let line = p.line();
                let name = p.name()?;
                p.expect("[")?;
                let size = p.index()?;
                p.expect("]")?;
                p.expect(";")?;
                prog.declare(t == "qreg", name, size, line)?;
            }
            "gate" | "opaque" => {
                let line = p.line();
                if let Some((name, d)) = definition(&mut p, t == "opaque")? {
                    prog.define(name, d, line)?;
                }
            }
            "barrier" => {
                prog.barriers += 1;
                p.skip()?
            }
            "measure" => {
                prog.measures += 1;
                p.skip()?
            }
            "reset" | "if" => return Err(p.err(format!("'{t}' is not a unitary step: qbench runs unitary circuits"))),
            _ => {
                let s = p.statement(t)?;
                if !applies {
                    return Err(p.err("a gate applied in the library"));
                }
                prog.apply_top(&s)?;
            }
        }
    }
    Ok(())
}

/// `gate name(params) args { body }` or `opaque name(params) args;`, the
/// keyword read already: the definition, None for an opaque gate. A
/// barrier in the body is skipped.
fn definition(p: &mut Parser, opaque: bool) -> Result<Option<(String, Definition)>> {
    let name = p.name()?;
    let params = if p.peek() == Some("(") {
        p.next()?;
        p.list(")", Parser::name)?
    } else {
        Vec::new()
    };
    let mut args = vec![p.name()?];
    while p.peek() == Some(",") {
        p.next()?;
        args.push(p.name()?);
    }
    if opaque {
        p.expect(";")?;
        return Ok(None);
    }
    p.expect("{")?;
    let mut body = Vec::new();
    while p.peek() != Some("}") {
        let g = p.name()?;
        if g == "barrier" {
            p.skip()?;
            continue;
        }
        body.push(p.statement(g)?);
    }
    p.expect("}")?;
    Ok(Some((name, Definition { params, args, body })))
}

#[cfg(test)]
mod tests {
    use super::super::circuit::reference;
    use super::*;

    fn run(text: &str) -> Vec<Complex64> {
        let c = parse(text, "t.qasm").unwrap();
        let mut start = vec![Complex64::new(0.0, 0.0); 1 << c.qubits];
        start[0] = Complex64::new(1.0, 0.0);
        reference::run(&c, start)
    }

    fn close(a: &[Complex64], b: &[Complex64]) -> bool {
        // Equal up to a global phase.
        let k = a.iter().zip(b).find(|(x, _)| x.norm() > 1e-6).map_or(Complex64::new(1.0, 0.0), |(x, y)| y / x);
        a.iter().zip(b).all(|(x, y)| (x * k - y).norm() < 1e-9)
    }

    #[test]
    fn a_bell_pair_and_a_toffoli() {
        let v = run(
            "OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[2];\ncreg c[2];\nh q[0];\ncx q[0],q[1];\nmeasure q -> c;\n",
        );
        let r = std::f64::consts::FRAC_1_SQRT_2;
        assert!(close(&v, &[r.into(), 0.0.into(), 0.0.into(), r.into()]), "{v:?}");
        // ccx from the library flips the third qubit when both others are 1.
        let v = run("OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[3];\nx q[0]; x q[1];\nccx q[0],q[1],q[2];\n");
        assert!((v[7].norm() - 1.0).abs() < 1e-9, "{v:?}");
    }

    #[test]
    fn parameters_definitions_and_registers() {
        let text = "OPENQASM 2.0;\ninclude \"qelib1.inc\";\ngate mine(a) x, y { rz(a/2) x; cx x, y; }\nqreg a[1];\nqreg b[2];\nh b;\nmine(pi*2^2/8 - -0.5) a[0], b[1];\nu3(1e-1, 2.0E0, -pi) b[0];\n";
        let c = parse(text, "t.qasm").unwrap();
        assert_eq!(c.qubits, 3);
        assert_eq!(c.gates.len(), 5);
        assert_eq!(c.gates[0], Gate::H(1));
        assert!(
            matches!(&c.gates[2], Gate::Phase { qubits, phase } if qubits == &[0] && (phase.arg() - (PI / 4.0 + 0.25)).abs() < 1e-12)
        );
        assert_eq!(c.gates[3], Gate::Cx { c: 0, t: 2 });
        // rx(θ) = u3(θ, −π/2, π/2) against its matrix.
        let m = u3(0.3, -PI / 2.0, PI / 2.0);
        assert!((m[1] - Complex64::new(0.0, -(0.15f64).sin())).norm() < 1e-12);
    }

    #[test]
    fn what_cannot_run_is_one_line_naming_file_and_line() {
        for (text, want) in [
            ("qreg q[2];\nfoo q[0];\n", "t.qasm:2: unknown gate 'foo'"),
            ("qreg q[2];\nh q[2];\n", "t.qasm:2: qubit q[2] is out of range"),
            ("qreg q[2];\ncx q[0],q[0];\n", "names a qubit twice"),
            ("qreg q[2];\nrz q[0];\n", "takes 1 parameter and 1 qubit"),
            ("qreg q[1];\nreset q[0];\n", "not a unitary step"),
            ("OPENQASM 3;\n", "qbench reads OpenQASM 2"),
            ("h q[0];\n", "no qreg named 'q'"),
            ("qreg q[2];\nh q[0]\n", "unexpected end of file"),
            ("creg c[1];\n", "no qreg"),
            ("qreg q[2];\nh q[4294967296];\n", "t.qasm:2: qubit q[4294967296] is out of range: q has 2"),
            ("qreg q[2];\nh q[99999999999999999999];\n", "t.qasm:2: the index 99999999999999999999 is past any register"),
            ("qreg q[4294967297];\n", "t.qasm:1: qreg q[4294967297] makes 4294967297 qubits in all, past any"),
            ("qreg q[40];\nqreg r[30];\n", "t.qasm:2: qreg r[30] makes 70 qubits in all"),
            ("qreg q[0];\n", "qreg q[0] holds no qubit"),
            ("qreg q[2];\nqreg q[3];\n", "t.qasm:2: a register named 'q' is declared already"),
            ("qreg q[2];\ncreg q[3];\n", "t.qasm:2: a register named 'q' is declared already"),
            ("qreg q[1];\ngate h a { x a; }\n", "t.qasm:2: gate 'h' is defined already"),
            ("qreg q[1];\ngate ccx a,b,c { x a; }\n", "t.qasm:2: gate 'ccx' is defined already"),
            ("qreg q[1];\ngate g a { g a; }\n", "t.qasm:2: unknown gate 'g' in the definition of 'g'"),
            ("qreg q[1];\nrz(0/0) q[0];\n", "t.qasm:2: parameter 1 of 'rz' is not a number: give a finite angle"),
            ("qreg q[1];\nrz(1e400) q[0];\n", "t.qasm:2: parameter 1 of 'rz' is infinite"),
            ("qreg q[1];\nrz(inf) q[0];\n", "t.qasm:2: unknown parameter 'inf'"),
            ("qreg q[1];\ngate g(a) x {\nu3(1,a,ln(0)) x; }\ng(1) q[0];\n", "t.qasm:3: parameter 3 of 'u3' is infinite"),
        ] {
            let e = parse(text, "t.qasm").unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.message().contains(want), "{text:?}: {e}");
            assert_eq!(e.message().lines().count(), 1);
        }
    }

    #[test]
    fn deep_expressions_are_one_line_not_a_stack_overflow() {
        let deep = 100_000;
        for (expr, what) in [
            (format!("{}1{}", "(".repeat(deep), ")".repeat(deep)), "parentheses"),
            (format!("{}1", "-".repeat(deep)), "minus signs"),
            (format!("1{}", "+1".repeat(deep)), "a chain"),
            (format!("{}2", "2^".repeat(deep)), "powers"),
        ] {
            let e = parse(&format!("qreg q[1];\nrz({expr}) q[0];\n"), "t.qasm").unwrap_err();
            assert_eq!(e.exit_code(), 2, "{what}");
            assert!(e.message().starts_with("t.qasm:2: an expression of more than 256 tokens"), "{what}: {e}");
        }
        // Within the limit, still read.
        let fine = format!("qreg q[1];\nrz({}pi{}) q[0];\n", "(-".repeat(60), ")".repeat(60));
        assert_eq!(parse(&fine, "t.qasm").unwrap().gates.len(), 1);
    }

    #[test]
    fn expansion_stops_at_the_gate_cap_and_nesting_at_its_depth() {
        // g30 calls g29 twice, …: 2^30 gates.
        let mut text = String::from("qreg q[1];\ngate g0 a { x a; }\n");
        for k in 1..=30 {
            text += &format!("gate g{k} a {{ g{} a; g{} a; }}\n", k - 1, k - 1);
        }
        text += "g30 q[0];\n";
        let started = std::time::Instant::now();
        let e = parse(&text, "t.qasm").unwrap_err();
        assert_eq!(e.message(), "t.qasm:33: the circuit expands to more than 1000000 gates, the most a circuit may have");
        assert!(started.elapsed().as_secs() < 30);
        // Below the cap, read.
        assert_eq!(parse(&text.replace("g30 q[0];", "g19 q[0];"), "t.qasm").unwrap().gates.len(), 1 << 19);
        let mut chain = String::from("qreg q[1];\ngate c0 a { x a; }\n");
        for k in 1..=100 {
            chain += &format!("gate c{k} a {{ c{} a; }}\n", k - 1);
        }
        chain += "c100 q[0];\n";
        let e = parse(&chain, "t.qasm").unwrap_err();
        assert_eq!(e.message(), "t.qasm:103: gate definitions nest more than 64 deep ('c36' at line 39)");
    }

    #[test]
    fn skipped_statements_are_said_once() {
        let (_, note) = parse_noting("qreg q[1];\ncreg c[1];\nbarrier q;\nh q[0];\nmeasure q -> c;\n", "t.qasm").unwrap();
        assert_eq!(note.as_deref(), Some("t.qasm: 1 measure and 1 barrier skipped: the register runs the circuit's unitary part"));
        assert_eq!(parse_noting("qreg q[1];\nh q[0];\n", "t.qasm").unwrap().1, None);
    }
}
