//! XLA HLO text to a syntax tree: a lexer that tracks line:column and a hand-written recursive
//! descent parser. It reads both the hand-written style (`%` names, typed operands, named
//! reducer computations) and what `jax.jit(f).lower(...).as_text(dialect="hlo")` prints
//! (layouts, `metadata=`, region computations, dotted and hyphenated names, `/*index=N*/`
//! comments, `entry_computation_layout`). Meaning is given to the tree in `kernel.rs`.
//!
//! What XLA's own parser refuses is refused here too: names that are not XLA names, a
//! signature or `entry_computation_layout` that does not read `(...) -> type`, and (through
//! `kernel_checks.rs`, run by `parse_module`) signatures and layouts that disagree with the
//! computations, and attributes an operator does not take.

use std::fmt;

/// A 1-based source position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: usize,
    pub col: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// A syntax error at a position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub pos: Pos,
    /// The stable code the Python checker reports the same refusal under (`hlo-syntax`,
    /// `bad-name`, `entry-layout-syntax`...).
    pub code: &'static str,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Str(String),
    Punct(char),
    Arrow,
    Eof,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    pos: Pos,
    start: usize,
    end: usize,
    /// Whitespace or a comment precedes the token.
    spaced: bool,
}

fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Word(w) => format!("`{w}`"),
        Tok::Str(s) => format!("string \"{s}\""),
        Tok::Punct(c) => format!("`{c}`"),
        Tok::Arrow => "`->`".into(),
        Tok::Eof => "end of file".into(),
    }
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '$'
}

/// What XLA accepts as a name: an ASCII letter or `_`, then letters, digits, `_`, `.` and
/// `-`, with an optional `%` before.
pub const NAME_RULE: &str =
    "a name is an ASCII letter or '_' followed by letters, digits, '_', '.' or '-', with an optional '%' before it";

/// The byte offset in `word` of the first character that keeps it from being a name, or
/// `None` when it is one. A name that cannot start is faulted at its start (`%` included).
pub fn name_fault(word: &str) -> Option<usize> {
    let body = word.strip_prefix('%').unwrap_or(word);
    let mut chars = body.char_indices();
    match chars.next() {
        Some((_, c)) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return Some(0),
    }
    let prefix = word.len() - body.len();
    chars.find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))).map(|(i, _)| prefix + i)
}

/// Splits `text` into tokens, dropping whitespace and `/* */` or `//` comments.
fn lex(text: &str) -> Result<Vec<Token>, SyntaxError> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut tokens = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1usize, 1usize);
    let mut spaced = true;
    let advance = |i: &mut usize, line: &mut usize, col: &mut usize| {
        if chars[*i].1 == '\n' {
            *line += 1;
            *col = 1;
        } else {
            *col += 1;
        }
        *i += 1;
    };
    let peek = |k: usize| chars.get(k).map(|&(_, c)| c);
    while i < chars.len() {
        let c = chars[i].1;
        let pos = Pos { line, col };
        let start = chars[i].0;
        if c.is_whitespace() {
            advance(&mut i, &mut line, &mut col);
            spaced = true;
            continue;
        }
        if c == '/' && peek(i + 1) == Some('*') {
            advance(&mut i, &mut line, &mut col);
            advance(&mut i, &mut line, &mut col);
            loop {
                if i >= chars.len() {
                    return Err(SyntaxError { pos, code: "hlo-syntax", message: "unterminated comment `/*`".into() });
                }
                if chars[i].1 == '*' && peek(i + 1) == Some('/') {
                    advance(&mut i, &mut line, &mut col);
                    advance(&mut i, &mut line, &mut col);
                    break;
                }
                advance(&mut i, &mut line, &mut col);
            }
            spaced = true;
            continue;
        }
        if c == '/' && peek(i + 1) == Some('/') {
            while i < chars.len() && chars[i].1 != '\n' {
                advance(&mut i, &mut line, &mut col);
            }
            spaced = true;
            continue;
        }
        let tok = if c == '"' {
            advance(&mut i, &mut line, &mut col);
            let mut s = String::new();
            loop {
                match peek(i) {
                    None => return Err(SyntaxError { pos, code: "hlo-syntax", message: "unterminated string".into() }),
                    Some('"') => {
                        advance(&mut i, &mut line, &mut col);
                        break;
                    }
                    Some('\\') if i + 1 < chars.len() => {
                        advance(&mut i, &mut line, &mut col);
                        s.push(chars[i].1);
                        advance(&mut i, &mut line, &mut col);
                    }
                    Some(ch) => {
                        s.push(ch);
                        advance(&mut i, &mut line, &mut col);
                    }
                }
            }
            Tok::Str(s)
        } else if c == '-' && peek(i + 1) == Some('>') {
            advance(&mut i, &mut line, &mut col);
            advance(&mut i, &mut line, &mut col);
            Tok::Arrow
        } else if is_word_char(c) || c == '%' || (c == '-' && peek(i + 1).is_some_and(is_word_char)) {
            let numeric = c.is_ascii_digit() || c == '-' || c == '.';
            let mut w = String::new();
            w.push(c);
            advance(&mut i, &mut line, &mut col);
            while let Some(ch) = peek(i) {
                let keep = is_word_char(ch)
                    || (ch == '-'
                        && peek(i + 1) != Some('>')
                        && peek(i + 1).is_some_and(|n| is_word_char(n) || n == '-'))
                    || (ch == '+' && numeric && w.ends_with(['e', 'E']));
                if !keep {
                    break;
                }
                w.push(ch);
                advance(&mut i, &mut line, &mut col);
            }
            Tok::Word(w)
        } else if "{}[](),=:;*<>!?@#".contains(c) {
            advance(&mut i, &mut line, &mut col);
            Tok::Punct(c)
        } else if c.is_alphanumeric() {
            let message = format!("`{c}` cannot be part of a name: {NAME_RULE}");
            return Err(SyntaxError { pos, code: "bad-name", message });
        } else {
            return Err(SyntaxError { pos, code: "hlo-syntax", message: format!("unexpected character `{c}`") });
        };
        let end = if i < chars.len() { chars[i].0 } else { text.len() };
        tokens.push(Token { tok, pos, start, end, spaced });
        spaced = false;
    }
    tokens.push(Token { tok: Tok::Eof, pos: Pos { line, col }, start: text.len(), end: text.len(), spaced: true });
    Ok(tokens)
}

/// Attributes left out of an instruction's text in messages.
const NOISE_ATTRS: &[&str] = &["metadata", "frontend_attributes", "backend_config", "statistics_viz"];

/// An HLO module: its computations in source order.
#[derive(Debug, Clone)]
pub struct Module {
    pub name: Option<String>,
    pub computations: Vec<Computation>,
    /// `entry_computation_layout={(...)->...}` of the header, layouts dropped.
    pub entry_layout: Option<EntryLayout>,
}

#[derive(Debug, Clone)]
pub struct Computation {
    pub name: String,
    pub pos: Pos,
    pub entry: bool,
    pub instrs: Vec<Instr>,
    /// `(x: bf16[], y: bf16[]) -> bf16[]` when written after the name.
    pub signature: Option<Signature>,
}

/// A computation's written signature: each parameter's name (without `%`), its position and
/// type; `pos` is the `(`'s.
#[derive(Debug, Clone)]
pub struct Signature {
    pub params: Vec<(String, Pos, TypeAst)>,
    pub result: TypeAst,
    pub pos: Pos,
}

/// The module header's `entry_computation_layout`: parameter and result types of the ENTRY
/// computation; `pos` is the parameter list's `(`.
#[derive(Debug, Clone)]
pub struct EntryLayout {
    pub params: Vec<TypeAst>,
    pub result: TypeAst,
    pub pos: Pos,
}

#[derive(Debug, Clone)]
pub enum TypeAst {
    Tensor { dtype: String, dims: Vec<i64>, pos: Pos },
    Tuple { elements: Vec<TypeAst>, pos: Pos },
}

impl TypeAst {
    pub fn pos(&self) -> Pos {
        match self {
            TypeAst::Tensor { pos, .. } | TypeAst::Tuple { pos, .. } => *pos,
        }
    }
}

impl fmt::Display for TypeAst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeAst::Tensor { dtype, dims, .. } => {
                let d: Vec<String> = dims.iter().map(i64::to_string).collect();
                write!(f, "{dtype}[{}]", d.join(","))
            }
            TypeAst::Tuple { elements, .. } => {
                let e: Vec<String> = elements.iter().map(ToString::to_string).collect();
                write!(f, "({})", e.join(", "))
            }
        }
    }
}

/// An operand reference or, for `constant` and `parameter`, the literal between the parens.
#[derive(Debug, Clone)]
pub enum Arg {
    /// `pos` is where the operand starts: its written type (`bf16[64] %x`) or its name.
    Operand { name: String, pos: Pos, declared: Option<TypeAst> },
    Literal(Value),
}

/// An attribute value, kept close to its text; `kernel.rs` reads the forms it needs.
#[derive(Debug, Clone)]
pub enum Value {
    Word(String, Pos),
    Str(String, Pos),
    /// `{a, b, ...}`
    List(Vec<Value>, Pos),
    /// `[start:limit(:stride)]`
    Range(Vec<String>, Pos),
    /// Several items without commas between them, e.g. `op_name="f" source_line=3`.
    Seq(Vec<Value>, Pos),
}

impl Value {
    pub fn pos(&self) -> Pos {
        match self {
            Value::Word(_, p) | Value::Str(_, p) | Value::List(_, p) | Value::Range(_, p) | Value::Seq(_, p) => *p,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Word(w, _) => f.write_str(w),
            Value::Str(s, _) => write!(f, "\"{s}\""),
            Value::List(items, _) => {
                let v: Vec<String> = items.iter().map(ToString::to_string).collect();
                write!(f, "{{{}}}", v.join(","))
            }
            Value::Range(parts, _) => write!(f, "[{}]", parts.join(":")),
            Value::Seq(items, _) => {
                let v: Vec<String> = items.iter().map(ToString::to_string).collect();
                f.write_str(&v.join(" "))
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Attr {
    pub name: String,
    pub pos: Pos,
    pub value: Value,
}

#[derive(Debug, Clone)]
pub struct Instr {
    pub name: String,
    pub pos: Pos,
    pub root: bool,
    pub ty: TypeAst,
    pub opcode: String,
    pub opcode_pos: Pos,
    pub args: Vec<Arg>,
    pub attrs: Vec<Attr>,
    /// The instruction's source text, whitespace runs collapsed to one space.
    pub text: String,
}

impl Instr {
    pub fn attr(&self, name: &str) -> Option<&Attr> {
        self.attrs.iter().find(|a| a.name == name)
    }
}

struct Parser<'a> {
    text: &'a str,
    toks: Vec<Token>,
    at: usize,
}

type PResult<T> = Result<T, SyntaxError>;

fn strip_percent(name: &str) -> String {
    name.strip_prefix('%').unwrap_or(name).to_string()
}

impl<'a> Parser<'a> {
    fn peek(&self) -> &Token {
        &self.toks[self.at]
    }

    fn peek_at(&self, k: usize) -> &Token {
        &self.toks[(self.at + k).min(self.toks.len() - 1)]
    }

    fn next(&mut self) -> Token {
        let t = self.toks[self.at].clone();
        if self.at + 1 < self.toks.len() {
            self.at += 1;
        }
        t
    }

    fn error<T>(&self, pos: Pos, message: impl Into<String>) -> PResult<T> {
        Err(SyntaxError { pos, code: "hlo-syntax", message: message.into() })
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek().tok == Tok::Punct(c)
    }

    fn expect_punct(&mut self, c: char, context: &str) -> PResult<Token> {
        if self.is_punct(c) {
            return Ok(self.next());
        }
        let t = self.peek();
        self.error(t.pos, format!("expected `{c}` {context}, found {}", describe(&t.tok)))
    }

    fn expect_word(&mut self, context: &str) -> PResult<(String, Pos)> {
        let t = self.next();
        match t.tok {
            Tok::Word(w) => Ok((w, t.pos)),
            other => self.error(t.pos, format!("expected {context}, found {}", describe(&other))),
        }
    }

    /// A word that must be a name; refused at its first character that cannot be part of one.
    fn expect_name(&mut self, context: &str) -> PResult<(String, Pos)> {
        let (word, pos) = self.expect_word(context)?;
        // A number where a name belongs is a misplaced literal, not a misspelt name.
        if word.parse::<f64>().is_ok() {
            return self.error(pos, format!("expected {context}, found `{word}`"));
        }
        match name_fault(&word) {
            None => Ok((word, pos)),
            Some(offset) => {
                let col = pos.col + word[..offset].chars().count();
                let message = format!("`{word}` is not a name: {NAME_RULE}");
                Err(SyntaxError { pos: Pos { line: pos.line, col }, code: "bad-name", message })
            }
        }
    }

    fn module(&mut self) -> PResult<Module> {
        let mut name = None;
        let mut entry_layout = None;
        if let Tok::Word(w) = &self.peek().tok {
            if w == "HloModule" {
                self.next();
                name = Some(strip_percent(&self.expect_name("a module name after `HloModule`")?.0));
                while self.is_punct(',') {
                    self.next();
                    let is_layout = matches!(&self.peek().tok, Tok::Word(w) if w == "entry_computation_layout")
                        && self.peek_at(1).tok == Tok::Punct('=');
                    if is_layout {
                        self.next();
                        self.next();
                        let layout = self.entry_layout().map_err(|e| SyntaxError { code: "entry-layout-syntax", ..e })?;
                        entry_layout = Some(layout);
                    } else {
                        self.attribute()?;
                    }
                }
            }
        }
        self.skip_debug_tables()?;
        let mut computations = Vec::new();
        while self.peek().tok != Tok::Eof {
            computations.push(self.computation()?);
        }
        Ok(Module { name, computations, entry_layout })
    }

    /// `{(type, ...)->type}` after `entry_computation_layout=`.
    fn entry_layout(&mut self) -> PResult<EntryLayout> {
        const WANTED: &str = "entry_computation_layout reads {(type, ...)->type}";
        self.expect_punct('{', &format!("to open the value: {WANTED}"))?;
        let open = self.expect_punct('(', &format!("to open the parameter types: {WANTED}"))?;
        let mut params = Vec::new();
        while !self.is_punct(')') {
            params.push(self.type_ast()?);
            if self.is_punct(',') {
                self.next();
            } else if !self.is_punct(')') {
                let n = self.peek();
                return self.error(n.pos, format!("expected `,` or `)` in the parameter types: {WANTED}, found {}", describe(&n.tok)));
            }
        }
        self.next();
        if self.peek().tok != Tok::Arrow {
            let n = self.peek();
            return self.error(n.pos, format!("{WANTED}: expected `->` after the parameter types, found {}", describe(&n.tok)));
        }
        self.next();
        let result = self.type_ast()?;
        self.expect_punct('}', &format!("to close the value: {WANTED}"))?;
        Ok(EntryLayout { params, result, pos: open.pos })
    }

    /// `(name: type, ...) -> type` after a computation's name.
    fn signature(&mut self) -> PResult<Signature> {
        let open = self.expect_punct('(', "to open the parameter list")?;
        let mut params = Vec::new();
        while !self.is_punct(')') {
            let (name, pos) = self.expect_name("a parameter name")?;
            self.expect_punct(':', &format!("after parameter name `{}`", strip_percent(&name)))?;
            let ty = self.type_ast()?;
            params.push((strip_percent(&name), pos, ty));
            if self.is_punct(',') {
                self.next();
            } else if !self.is_punct(')') {
                let n = self.peek();
                return self.error(n.pos, format!("expected `,` or `)` in the parameter list, found {}", describe(&n.tok)));
            }
        }
        self.next();
        if self.peek().tok != Tok::Arrow {
            let n = self.peek();
            return self.error(n.pos, format!("expected `->` and the result type after the parameter list, found {}", describe(&n.tok)));
        }
        self.next();
        let result = self.type_ast()?;
        Ok(Signature { params, result, pos: open.pos })
    }

    /// Skips the source-location tables `as_text(debug_info=True)` prints before the
    /// computations (`FileNames`, `FunctionNames`, `FileLocations`, `StackFrames`): each a
    /// title followed by `<id> <string or {...}>` entries.
    fn skip_debug_tables(&mut self) -> PResult<()> {
        const TABLES: [&str; 4] = ["FileNames", "FunctionNames", "FileLocations", "StackFrames"];
        while matches!(&self.peek().tok, Tok::Word(w) if TABLES.contains(&w.as_str())) {
            self.next();
            while matches!(&self.peek().tok, Tok::Word(w) if w.parse::<u64>().is_ok()) {
                self.next();
                match self.peek().tok {
                    Tok::Str(_) => {
                        self.next();
                    }
                    Tok::Punct('{') => self.skip_balanced()?,
                    _ => {
                        let t = self.peek();
                        return self.error(
                            t.pos,
                            format!("expected a string or `{{` in a debug table, found {}", describe(&t.tok)),
                        );
                    }
                }
            }
        }
        Ok(())
    }

    fn computation(&mut self) -> PResult<Computation> {
        let mut entry = false;
        if self.peek().tok == Tok::Word("ENTRY".into()) {
            self.next();
            entry = true;
        }
        let (name, pos) = self.expect_name("a computation name")?;
        let signature = if self.is_punct('(') { Some(self.signature()?) } else { None };
        self.expect_punct('{', &format!("to open computation `{}`", strip_percent(&name)))?;
        let mut instrs = Vec::new();
        while !self.is_punct('}') {
            if self.peek().tok == Tok::Eof {
                return self
                    .error(self.peek().pos, format!("computation `{}` is not closed with `}}`", strip_percent(&name)));
            }
            instrs.push(self.instruction()?);
        }
        self.next();
        Ok(Computation { name: strip_percent(&name), pos, entry, instrs, signature })
    }

    /// Skips a parenthesised or braced group, nested groups included.
    fn skip_balanced(&mut self) -> PResult<()> {
        let open = self.next();
        let mut stack = vec![open.clone()];
        while let Some(top) = stack.last() {
            let t = self.next();
            match t.tok {
                Tok::Punct('(') | Tok::Punct('{') | Tok::Punct('[') => stack.push(t),
                Tok::Punct(c @ (')' | '}' | ']')) => {
                    let want = match top.tok {
                        Tok::Punct('(') => ')',
                        Tok::Punct('{') => '}',
                        _ => ']',
                    };
                    if c != want {
                        return self.error(
                            t.pos,
                            format!("expected `{want}` to close the group opened at {}, found `{c}`", top.pos),
                        );
                    }
                    stack.pop();
                }
                Tok::Eof => return self.error(top.pos, "this group is never closed"),
                _ => {}
            }
        }
        Ok(())
    }

    fn type_ast(&mut self) -> PResult<TypeAst> {
        let t = self.peek().clone();
        if t.tok == Tok::Punct('(') {
            self.next();
            let mut elements = Vec::new();
            while !self.is_punct(')') {
                elements.push(self.type_ast()?);
                if self.is_punct(',') {
                    self.next();
                } else if !self.is_punct(')') {
                    let n = self.peek();
                    return self
                        .error(n.pos, format!("expected `,` or `)` in a tuple type, found {}", describe(&n.tok)));
                }
            }
            self.next();
            return Ok(TypeAst::Tuple { elements, pos: t.pos });
        }
        let (dtype, pos) = self.expect_word("a type such as bf16[64,64]")?;
        if !self.is_punct('[') || self.peek().spaced {
            // At what follows the element type, where its `[` was expected.
            return self.error(self.peek().pos, format!("expected a type such as bf16[64,64], found `{dtype}`"));
        }
        self.next();
        let mut dims = Vec::new();
        while !self.is_punct(']') {
            let d = self.next();
            match &d.tok {
                Tok::Word(w) => match w.parse::<i64>() {
                    Ok(v) if v >= 0 => dims.push(v),
                    _ => return self.error(d.pos, format!("expected a dimension size, found `{w}`")),
                },
                Tok::Punct('<') | Tok::Punct('?') => {
                    return self.error(d.pos, "dynamic dimensions are not supported; give every dimension a size")
                }
                other => return self.error(d.pos, format!("expected a dimension size, found {}", describe(other))),
            }
            if self.is_punct(',') {
                self.next();
            } else if !self.is_punct(']') {
                let n = self.peek();
                return self.error(n.pos, format!("expected `,` or `]` in the dimensions, found {}", describe(&n.tok)));
            }
        }
        self.next();
        // A layout such as {1,0} (possibly with tiling) follows the dimensions directly.
        if self.is_punct('{') && !self.peek().spaced {
            self.skip_balanced()?;
        }
        Ok(TypeAst::Tensor { dtype, dims, pos })
    }

    fn instruction(&mut self) -> PResult<Instr> {
        let first = self.peek().clone();
        let mut root = false;
        if first.tok == Tok::Word("ROOT".into()) && self.peek_at(1).tok != Tok::Punct('=') {
            self.next();
            root = true;
        }
        let (name, pos) = self.expect_name("an instruction name")?;
        self.expect_punct('=', &format!("after instruction name `{}`", strip_percent(&name)))?;
        let ty = self.type_ast()?;
        let (opcode, opcode_pos) = self.expect_word("an operator name")?;
        self.expect_punct('(', &format!("after operator `{opcode}`"))?;
        let mut args = Vec::new();
        while !self.is_punct(')') {
            args.push(self.arg(&opcode)?);
            if self.is_punct(',') {
                self.next();
            } else if !self.is_punct(')') {
                let n = self.peek();
                return self.error(
                    n.pos,
                    format!("expected `,` or `)` in the operands of `{opcode}`, found {}", describe(&n.tok)),
                );
            }
        }
        let close = self.next();
        // The text shown in messages: the instruction without its source-location and
        // configuration attributes, which say nothing about what it computes.
        let mut text = self.text[first.start..close.end].to_string();
        let mut attrs = Vec::new();
        while self.is_punct(',') {
            self.next();
            let start = self.peek().start;
            let attr = self.attribute()?;
            if !NOISE_ATTRS.contains(&attr.name.as_str()) {
                text.push_str(", ");
                text.push_str(&self.text[start..self.toks[self.at - 1].end]);
            }
            attrs.push(attr);
        }
        if self.is_punct(';') {
            self.next();
        }
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        Ok(Instr { name: strip_percent(&name), pos, root, ty, opcode, opcode_pos, args, attrs, text })
    }

    fn arg(&mut self, opcode: &str) -> PResult<Arg> {
        if opcode == "constant" || opcode == "parameter" {
            return Ok(Arg::Literal(self.item(&[',', ')'])?));
        }
        // A typed operand: `bf16[64,64]{1,0} %K`.
        let typed = matches!(self.peek().tok, Tok::Punct('('))
            || (matches!(self.peek().tok, Tok::Word(_))
                && self.peek_at(1).tok == Tok::Punct('[')
                && !self.peek_at(1).spaced);
        let pos = self.peek().pos;
        let declared = if typed { Some(self.type_ast()?) } else { None };
        let (name, _) = self.expect_name("an operand name")?;
        Ok(Arg::Operand { name: strip_percent(&name), pos, declared })
    }

    fn attribute(&mut self) -> PResult<Attr> {
        let (name, pos) = self.expect_word("an attribute name")?;
        self.expect_punct('=', &format!("after attribute name `{name}`"))?;
        let value = self.attr_value()?;
        Ok(Attr { name, pos, value })
    }

    /// A top-level attribute value: a braced list, a string, or adjacent tokens such as
    /// `b01f_01io->b01f` or `%add_bf16`.
    fn attr_value(&mut self) -> PResult<Value> {
        let t = self.peek().clone();
        match &t.tok {
            Tok::Punct('{') => self.list(),
            Tok::Punct('[') => self.range(),
            Tok::Str(s) => {
                self.next();
                Ok(Value::Str(s.clone(), t.pos))
            }
            Tok::Word(_) | Tok::Punct(_) | Tok::Arrow => {
                let mut text = String::new();
                loop {
                    let n = self.peek();
                    let stop = (!text.is_empty() && n.spaced)
                        || matches!(n.tok, Tok::Eof | Tok::Punct(',' | '{' | '}' | '(' | ')' | ';'));
                    if stop {
                        break;
                    }
                    let n = self.next();
                    text.push_str(&self.text[n.start..n.end]);
                }
                if text.is_empty() {
                    return self.error(t.pos, format!("expected an attribute value, found {}", describe(&t.tok)));
                }
                Ok(Value::Word(text, t.pos))
            }
            Tok::Eof => self.error(t.pos, "expected an attribute value, found end of file"),
        }
    }

    fn list(&mut self) -> PResult<Value> {
        let open = self.expect_punct('{', "to open a list")?;
        let mut items = Vec::new();
        while !self.is_punct('}') {
            items.push(self.item(&[',', '}'])?);
            if self.is_punct(',') {
                self.next();
            } else if !self.is_punct('}') {
                let n = self.peek();
                return self.error(
                    n.pos,
                    format!("expected `,` or `}}` in the list opened at {}, found {}", open.pos, describe(&n.tok)),
                );
            }
        }
        self.next();
        Ok(Value::List(items, open.pos))
    }

    /// Whether the tokens ahead are `[word(:word)*]`.
    fn at_range(&self) -> bool {
        let mut k = 1;
        loop {
            if !matches!(self.peek_at(k).tok, Tok::Word(_)) {
                return false;
            }
            match self.peek_at(k + 1).tok {
                Tok::Punct(':') => k += 2,
                Tok::Punct(']') => return k > 1,
                _ => return false,
            }
        }
    }

    fn range(&mut self) -> PResult<Value> {
        let open = self.expect_punct('[', "to open a range")?;
        let mut parts = Vec::new();
        loop {
            let (w, _) = self.expect_word("a range bound")?;
            parts.push(w);
            let t = self.next();
            match t.tok {
                Tok::Punct(':') => continue,
                Tok::Punct(']') => break,
                other => {
                    return self.error(t.pos, format!("expected `:` or `]` in a range, found {}", describe(&other)))
                }
            }
        }
        Ok(Value::Range(parts, open.pos))
    }

    /// One element of a list (or a literal): values up to one of `stops`.
    fn item(&mut self, stops: &[char]) -> PResult<Value> {
        let start = self.peek().pos;
        let mut parts = Vec::new();
        loop {
            let t = self.peek().clone();
            match &t.tok {
                Tok::Punct(c) if stops.contains(c) => break,
                Tok::Eof => return self.error(t.pos, "unexpected end of file inside a list"),
                Tok::Punct('{') => parts.push(self.list()?),
                Tok::Punct('[') if self.at_range() => parts.push(self.range()?),
                Tok::Punct('(' | '[') => {
                    // A group that is not a range (a tuple type, the dimensions of a type in a
                    // layout attribute): kept as its text.
                    self.skip_balanced()?;
                    let end = self.toks[self.at - 1].end;
                    parts.push(Value::Word(self.text[t.start..end].to_string(), t.pos));
                }
                Tok::Str(s) => {
                    self.next();
                    parts.push(Value::Str(s.clone(), t.pos));
                }
                Tok::Punct(c @ (')' | '}' | ']')) => {
                    return self.error(t.pos, format!("unexpected `{c}`"));
                }
                _ => {
                    self.next();
                    parts.push(Value::Word(self.text[t.start..t.end].to_string(), t.pos));
                }
            }
        }
        match parts.len() {
            0 => self.error(start, format!("expected a value, found {}", describe(&self.peek().tok))),
            1 => Ok(parts.pop().expect("one part")),
            _ => Ok(Value::Seq(parts, start)),
        }
    }
}

/// Parses HLO text into a module.
pub fn parse_module(text: &str) -> Result<Module, SyntaxError> {
    let toks = lex(text)?;
    let mut p = Parser { text, toks, at: 0 };
    let module = p.module()?;
    crate::kernel_checks::check_module(&module)?;
    Ok(module)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexes_names_numbers_and_arrows() {
        let toks = lex("%a.1 = f32[2]{0} x-y, b01f_01io->b01f /*index=5*/ -inf 1e-3").unwrap();
        let words: Vec<String> = toks
            .iter()
            .map(|t| match &t.tok {
                Tok::Word(w) => w.clone(),
                Tok::Punct(c) => c.to_string(),
                Tok::Arrow => "->".into(),
                Tok::Str(s) => s.clone(),
                Tok::Eof => "EOF".into(),
            })
            .collect();
        assert_eq!(
            words,
            [
                "%a.1",
                "=",
                "f32",
                "[",
                "2",
                "]",
                "{",
                "0",
                "}",
                "x-y",
                ",",
                "b01f_01io",
                "->",
                "b01f",
                "-inf",
                "1e-3",
                "EOF"
            ]
        );
        assert_eq!(toks[1].pos, Pos { line: 1, col: 6 });
    }

    #[test]
    fn parses_attributes_of_every_shape() {
        let m = parse_module(
            "HloModule m, entry_computation_layout={(f32[4,4]{1,0})->f32[2,4]{1,0}}\n\
             ENTRY e {\n  p = f32[4,4]{1,0} parameter(0)\n  \
             s = f32[2,4] slice(p), slice={[0:2], [0:4:1]}, metadata={op_name=\"x\" source_line=3}\n  \
             ROOT c = f32[2,4] copy(s), backend_config=\"{}\"\n}\n",
        )
        .unwrap();
        assert_eq!(m.name.as_deref(), Some("m"));
        let e = &m.computations[0];
        assert!(e.entry);
        assert_eq!(e.instrs.len(), 3);
        let s = &e.instrs[1];
        assert_eq!(s.attr("slice").unwrap().value.to_string(), "{[0:2],[0:4:1]}");
        assert!(matches!(s.attr("metadata").unwrap().value, Value::List(ref v, _) if matches!(v[0], Value::Seq(..))));
        assert!(e.instrs[2].root);
        assert_eq!(s.text, "s = f32[2,4] slice(p), slice={[0:2], [0:4:1]}", "metadata is left out of the text");
        assert_eq!(e.instrs[2].text, "ROOT c = f32[2,4] copy(s)");
    }

    #[test]
    fn names_are_what_xla_accepts() {
        for name in ["a", "%a", "_x.1", "%get-tuple-element.3", "Arg_0.1"] {
            assert_eq!(name_fault(name), None, "{name}");
        }
        for (word, at) in [("1a", 0), ("%1a", 0), ("%", 0), ("a$b", 1), ("%a$b", 2), ("-a", 0)] {
            assert_eq!(name_fault(word), Some(at), "{word}");
        }
        let err = parse_module("HloModule m\nENTRY e {\n  a\u{e9} = f32[4] parameter(0)\n}\n").unwrap_err();
        assert_eq!(err.pos, Pos { line: 3, col: 4 });
        assert!(err.message.contains("cannot be part of a name"), "{}", err.message);
        let err = parse_module("HloModule m\nENTRY e (a: f32[4]) {\n  ROOT a = f32[4] parameter(0)\n}\n").unwrap_err();
        assert_eq!(err.pos, Pos { line: 2, col: 21 });
        assert!(err.message.contains("expected `->`"), "{}", err.message);
    }

    #[test]
    fn reports_position_of_syntax_errors() {
        let err =
            parse_module("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  q = f32[4] add(p p)\n}\n").unwrap_err();
        assert_eq!(err.pos, Pos { line: 4, col: 20 });
        assert!(err.message.contains("expected `,` or `)`"), "{}", err.message);
        let err = parse_module("ENTRY e {\n  p = f32[<=4] parameter(0)\n}").unwrap_err();
        assert_eq!(err.pos.line, 2);
        assert!(err.message.contains("dynamic"));
    }
}
