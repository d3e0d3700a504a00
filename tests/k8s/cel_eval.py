#!/usr/bin/env python3
"""cel_eval.py - a small CEL evaluator and ValidatingAdmissionPolicy runner,
for exactly the expression forms deploy/15-admission.yaml uses.

The language implemented (a subset of CEL, cel-spec langdef.md):
  literals      'str' "str" (no escapes but \\' \\" \\\\), 123, true, false,
                null, [a, b], {} and {k: v}
  names         request, object, oldObject, namespaceObject, variables
                (and the .all()/.exists() binders)
  selection     a.f (a missing field is an error, as in CEL), a[k]
  has(a.f)      the field-presence macro
  a.all(x, p), a.exists(x, p)   over a list's elements or a map's keys
  operators     ?: || && == != in !  with CEL's precedence, and its
                commutative error semantics for && || and the macros
Anything else (other functions or macros, arithmetic, comparisons, escapes,
bytes, uints, doubles, optional syntax) is refused when the expression is
PARSED, with an error naming it, so a policy that grows a construct this
file does not implement fails its test instead of passing by accident.

Equality is CEL's: values of different types are not equal (1 != true,
'1' != 1); lists and maps compare element-wise.

Policy semantics (k8s.io/apiserver validating admission policy): the
request matches if its operation, resource and namespace match
matchConstraints; then every matchCondition must be true (an error with
failurePolicy Fail denies); then every validation must be true: the first
one false (or in error) denies with its message.

CLI: cel_eval.py POLICY.yaml REQUESTS.json  -> one line per request:
  "admit NAME" | "deny NAME: MESSAGE" | "skip NAME (not matched)"
REQUESTS.json: [{"name", "request", "namespaceObject", "object", "oldObject"}]
(the namespace selector is matched against namespaceObject's labels).
"""
import json
import re
import sys


class CelError(Exception):
    """An evaluation error (CEL's error value)."""


class Unsupported(Exception):
    """A construct this evaluator does not implement."""


TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>'(?:[^'\\\n]|\\['"\\])*'|"(?:[^"\\\n]|\\['"\\])*")
  | (?P<int>[0-9]+(?![0-9.eExXuU]))
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|&&|\|\||[!?:.,\[\](){}])
""", re.X)
KEYWORDS = {"true": True, "false": False, "null": None}
RESERVED = {"as", "break", "const", "continue", "else", "for", "function",
            "if", "import", "let", "loop", "package", "namespace", "return",
            "var", "void", "while"}


def tokenize(src):
    out, i = [], 0
    while i < len(src):
        m = TOKEN.match(src, i)
        if not m:
            raise Unsupported("unsupported syntax at %r" % src[i:i + 12])
        i = m.end()
        k = m.lastgroup
        if k == "ws":
            continue
        v = m.group(k)
        if k == "str":
            v = re.sub(r"\\(['\"\\])", r"\1", v[1:-1])
        elif k == "int":
            v = int(v)
        elif k == "id" and v in RESERVED:
            raise Unsupported("reserved word %r" % v)
        elif k == "id" and v == "in":
            k = "op"
        out.append((k, v))
    out.append(("end", None))
    return out


class Parser:
    """Recursive descent over CEL's grammar, restricted as above. Nodes are
    tuples: ("lit", v) ("id", n) ("sel", e, f) ("idx", e, k) ("has", e, f)
    ("list", [e]) ("map", [(k, v)]) ("not", e) ("and"/"or", a, b)
    ("eq"/"ne"/"in", a, b) ("cond", c, a, b) ("all"/"exists", e, var, p)."""

    def __init__(self, src):
        self.t = tokenize(src)
        self.i = 0

    def peek(self):
        return self.t[self.i]

    def take(self, val=None):
        k, v = self.t[self.i]
        if val is not None and v != val:
            raise Unsupported("expected %r, found %r" % (val, v))
        self.i += 1
        return k, v

    def parse(self):
        e = self.expr()
        if self.peek()[0] != "end":
            raise Unsupported("unexpected %r" % (self.peek()[1],))
        return e

    def expr(self):
        c = self.or_()
        if self.peek() == ("op", "?"):
            self.take("?")
            a = self.or_()
            self.take(":")
            b = self.expr()
            return ("cond", c, a, b)
        return c

    def or_(self):
        e = self.and_()
        while self.peek() == ("op", "||"):
            self.take()
            e = ("or", e, self.and_())
        return e

    def and_(self):
        e = self.rel()
        while self.peek() == ("op", "&&"):
            self.take()
            e = ("and", e, self.rel())
        return e

    def rel(self):
        e = self.unary()
        ops = {"==": "eq", "!=": "ne", "in": "in"}
        while self.peek()[0] == "op" and self.peek()[1] in ops:
            _, v = self.take()
            e = (ops[v], e, self.unary())
        return e

    def unary(self):
        if self.peek() == ("op", "!"):
            self.take()
            return ("not", self.unary())
        return self.member()

    def member(self):
        e = self.primary()
        while True:
            k, v = self.peek()
            if (k, v) == ("op", "."):
                self.take()
                k2, f = self.take()
                if k2 != "id":
                    raise Unsupported("field name expected after '.'")
                if self.peek() == ("op", "("):
                    e = self.macro(e, f)
                else:
                    e = ("sel", e, f)
            elif (k, v) == ("op", "["):
                self.take()
                key = self.expr()
                self.take("]")
                e = ("idx", e, key)
            else:
                return e

    def macro(self, target, name):
        if name not in ("all", "exists"):
            raise Unsupported("function or macro %r" % name)
        self.take("(")
        k, var = self.take()
        if k != "id" or var in KEYWORDS:
            raise Unsupported("%s() needs a variable name" % name)
        self.take(",")
        p = self.expr()
        self.take(")")
        return (name, target, var, p)

    def primary(self):
        k, v = self.take()
        if k in ("str", "int"):
            return ("lit", v)
        if k == "id":
            if v in KEYWORDS:
                return ("lit", KEYWORDS[v])
            if self.peek() == ("op", "("):
                if v != "has":
                    raise Unsupported("function %r" % v)
                self.take("(")
                a = self.member()
                self.take(")")
                if a[0] != "sel":
                    raise Unsupported("has() needs a field selection")
                return ("has", a[1], a[2])
            return ("id", v)
        if (k, v) == ("op", "("):
            e = self.expr()
            self.take(")")
            return e
        if (k, v) == ("op", "["):
            items = []
            while self.peek() != ("op", "]"):
                items.append(self.expr())
                if self.peek() != ("op", "]"):
                    self.take(",")
            self.take("]")
            return ("list", items)
        if (k, v) == ("op", "{"):
            items = []
            while self.peek() != ("op", "}"):
                key = self.expr()
                self.take(":")
                items.append((key, self.expr()))
                if self.peek() != ("op", "}"):
                    self.take(",")
            self.take("}")
            return ("map", items)
        raise Unsupported("unexpected %r" % (v,))


def parse(src):
    return Parser(src).parse()


def typename(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "map"
    if isinstance(v, float):
        return "double"
    raise CelError("value of unknown type %r" % (v,))


def cel_eq(a, b):
    ta, tb = typename(a), typename(b)
    if ta != tb:
        return False
    if ta == "list":
        return len(a) == len(b) and all(cel_eq(x, y) for x, y in zip(a, b))
    if ta == "map":
        return set(a) == set(b) and all(cel_eq(a[k], b[k]) for k in a)
    return a == b


def want_bool(v, what):
    if not isinstance(v, bool):
        raise CelError("%s: no such overload for %s" % (what, typename(v)))
    return v


class Lazy:
    """variables.NAME: evaluated on first use, an error kept as one."""

    def __init__(self, env, defs):
        self.env, self.defs, self.vals = env, dict(defs), {}

    def get(self, name):
        if name not in self.defs:
            raise CelError("no such key: variables.%s" % name)
        if name not in self.vals:
            try:
                self.vals[name] = (True, evaluate(self.defs[name], self.env))
            except CelError as e:
                self.vals[name] = (False, e)
        ok, v = self.vals[name]
        if not ok:
            raise v
        return v


def evaluate(n, env):
    op = n[0]
    if op == "lit":
        return n[1]
    if op == "id":
        if n[1] not in env:
            raise CelError("undeclared reference to %r" % n[1])
        return env[n[1]]
    if op == "sel":
        if n[1] == ("id", "variables") and isinstance(env.get("variables"), Lazy):
            return env["variables"].get(n[2])
        t = evaluate(n[1], env)
        if not isinstance(t, dict):
            raise CelError("no such overload: .%s on %s" % (n[2], typename(t)))
        if n[2] not in t:
            raise CelError("no such key: %s" % n[2])
        return t[n[2]]
    if op == "idx":
        t, k = evaluate(n[1], env), evaluate(n[2], env)
        if isinstance(t, dict):
            if not isinstance(k, str) or k not in t:
                raise CelError("no such key: %r" % (k,))
            return t[k]
        if isinstance(t, list):
            if typename(k) != "int" or not 0 <= k < len(t):
                raise CelError("index out of range: %r" % (k,))
            return t[k]
        raise CelError("no such overload: index on %s" % typename(t))
    if op == "has":
        t = evaluate(n[1], env)
        if not isinstance(t, dict):
            raise CelError("has() on %s" % typename(t))
        return n[2] in t
    if op == "list":
        return [evaluate(x, env) for x in n[1]]
    if op == "map":
        out = {}
        for k, v in n[1]:
            kk = evaluate(k, env)
            if typename(kk) not in ("string", "int", "bool") or kk in out:
                raise CelError("bad or repeated map key %r" % (kk,))
            out[kk] = evaluate(v, env)
        return out
    if op == "not":
        return not want_bool(evaluate(n[1], env), "!_")
    if op in ("and", "or"):
        short = op == "or"   # the value that decides: true for ||, false for &&
        err = None
        for side in (n[1], n[2]):
            try:
                v = want_bool(evaluate(side, env), "_&&_" if op == "and" else "_||_")
            except CelError as e:
                err = err or e
                continue
            if v == short:
                return short
        if err is not None:
            raise err
        return not short
    if op in ("eq", "ne"):
        r = cel_eq(evaluate(n[1], env), evaluate(n[2], env))
        return r if op == "eq" else not r
    if op == "in":
        a, c = evaluate(n[1], env), evaluate(n[2], env)
        if isinstance(c, list):
            return any(cel_eq(a, x) for x in c)
        if isinstance(c, dict):
            return any(cel_eq(a, x) for x in c)
        raise CelError("no such overload: in %s" % typename(c))
    if op == "cond":
        if want_bool(evaluate(n[1], env), "_?_:_"):
            return evaluate(n[2], env)
        return evaluate(n[3], env)
    if op in ("all", "exists"):
        t = evaluate(n[1], env)
        if not isinstance(t, (list, dict)):
            raise CelError("%s() on %s" % (op, typename(t)))
        short = op == "exists"
        err = None
        for x in list(t):
            e2 = dict(env)
            e2[n[2]] = x
            try:
                v = want_bool(evaluate(n[3], e2), op)
            except CelError as e:
                err = err or e
                continue
            if v == short:
                return short
        if err is not None:
            raise err
        return not short
    raise Unsupported("node %r" % (op,))


def cel(src, env):
    """Parses and evaluates src in env (a dict of names to JSON values)."""
    return evaluate(parse(src), env)


# -- ValidatingAdmissionPolicy --

def selector_match(sel, labels):
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for r in sel.get("matchExpressions") or []:
        k, o, vals = r["key"], r["operator"], r.get("values") or []
        if o == "In" and labels.get(k) not in vals:
            return False
        if o == "NotIn" and k in labels and labels[k] in vals:
            return False
        if o == "Exists" and k not in labels:
            return False
        if o == "DoesNotExist" and k in labels:
            return False
        if o not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise Unsupported("selector operator %r" % o)
    return True


def rule_match(rule, req):
    res = req["resource"]
    full = res["resource"] + ("/" + req["subResource"] if req.get("subResource") else "")

    def has(lst, v):
        return "*" in lst or v in lst
    return (has(rule.get("apiGroups", []), res["group"]) and
            has(rule.get("apiVersions", []), res["version"]) and
            has(rule.get("operations", []), req["operation"]) and
            has(rule.get("resources", []), full))


def check_policy_fields(spec):
    """Refuses policy features this runner does not implement."""
    for f in ("paramKind", "auditAnnotations"):
        if f in spec:
            raise Unsupported("policy field %s" % f)
    mc = spec.get("matchConstraints") or {}
    for f in ("excludeResourceRules", "objectSelector"):
        if f in mc:
            raise Unsupported("matchConstraints.%s" % f)
    if mc.get("matchPolicy", "Equivalent") != "Equivalent":
        raise Unsupported("matchPolicy %s" % mc["matchPolicy"])
    for v in spec.get("validations", []):
        if "messageExpression" in v:
            raise Unsupported("messageExpression")


def admit(policy, binding, case):
    """("admit"|"deny"|"skip", message) for one request against the policy
    as its binding applies it."""
    spec = policy["spec"]
    check_policy_fields(spec)
    bs = binding["spec"]
    if bs.get("policyName") != policy["metadata"]["name"]:
        raise Unsupported("binding names another policy")
    if "paramRef" in bs or "matchResources" in bs:
        raise Unsupported("binding paramRef/matchResources")
    if "Deny" not in bs.get("validationActions", []):
        return "admit", "binding does not deny"
    req = case["request"]
    mc = spec.get("matchConstraints") or {}
    if not any(rule_match(r, req) for r in mc.get("resourceRules", [])):
        return "skip", "resource or operation not matched"
    nso = case.get("namespaceObject") or {}
    if "namespaceSelector" in mc and not selector_match(
            mc["namespaceSelector"], nso.get("metadata", {}).get("labels") or {}):
        return "skip", "namespace not matched"
    fail = spec.get("failurePolicy", "Fail") == "Fail"
    env = {"request": req, "object": case.get("object"),
           "oldObject": case.get("oldObject"),
           "namespaceObject": case.get("namespaceObject")}
    for m in spec.get("matchConditions", []):
        try:
            if not want_bool(cel(m["expression"], env), m["name"]):
                return "skip", "matchCondition %s false" % m["name"]
        except CelError as e:
            if fail:
                return "deny", "matchCondition %s: %s" % (m["name"], e)
            return "skip", "matchCondition %s error ignored" % m["name"]
    env["variables"] = Lazy(env, [(v["name"], parse(v["expression"]))
                                  for v in spec.get("variables", [])])
    for v in spec.get("validations", []):
        msg = v.get("message") or "failed expression: %s" % v["expression"].strip()
        try:
            if not want_bool(cel(v["expression"], env), "validation"):
                return "deny", msg
        except CelError as e:
            if fail:
                return "deny", "%s (expression error: %s)" % (msg, e)
    return "admit", ""


def load_policy(path):
    import yaml  # python3-yaml (deps/k8s.txt)
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    pol = [d for d in docs if d.get("kind") == "ValidatingAdmissionPolicy"]
    bnd = [d for d in docs if d.get("kind") == "ValidatingAdmissionPolicyBinding"]
    if len(pol) != 1 or len(bnd) != 1:
        raise Unsupported("want one policy and one binding in %s" % path)
    # Every expression must parse before anything is evaluated.
    s = pol[0]["spec"]
    for x in s.get("matchConditions", []) + s.get("variables", []) + \
            s.get("validations", []):
        parse(x["expression"])
    return pol[0], bnd[0]


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: cel_eval.py POLICY.yaml REQUESTS.json\n")
        return 2
    try:
        pol, bnd = load_policy(argv[1])
        cases = json.load(open(argv[2]))
        for c in cases:
            verdict, msg = admit(pol, bnd, c)
            if verdict == "deny":
                print("deny %s: %s" % (c["name"], msg))
            elif verdict == "skip":
                print("skip %s (%s)" % (c["name"], msg))
            else:
                print("admit %s" % c["name"])
    except Unsupported as e:
        print("unsupported: %s" % e)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
