"""The measure grammar: canonical printing, round trips and clear errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qrelkit.errors import MeasureSyntaxError
from qrelkit.measures.conventions import Conventions
from qrelkit.measures.grammar import INFO, parse, parse_all, required_depth


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("nDCG@10", "nDCG@10"),
        ("ndcg_cut@10", "nDCG@10"),
        ("R@100", "R(rel=1)@100"),
        ("recall(rel=2)@100", "R(rel=2)@100"),
        ("nDCG(ties=docid_desc, gain=linear)@10", "nDCG(gain=linear,ties=docid_desc)@10"),
        ("nDCG(gain={3:7, 0:0, 1:1, 2:3.5})@5", "nDCG(gain={0:0,1:1,2:3.5,3:7})@5"),
        ("nDCG(discount=log10)", "nDCG(discount=log10)"),
        ("MAP", "AP(rel=1)"),
        ("AP(rel=2)@20", "AP(rel=2)@20"),
        ("MRR@10", "RR(rel=1)@10"),
        ("Rprec", "Rprec(rel=1)"),
        ("Judged@10", "Judged@10"),
        ("NumRel(rel=2)", "NumRel(rel=2)"),
    ],
)
def test_canonical_form(text, canonical):
    m = parse(text)
    assert str(m) == canonical
    assert parse(str(m)) == m


@given(
    name=st.sampled_from(sorted(INFO)),
    k=st.integers(1, 1000),
    rel=st.integers(0, 4),
    gain=st.sampled_from([None, "linear", "exponential", "{0:0,1:2.5}"]),
    ties=st.sampled_from([None, "average", "docid_asc", "pessimistic"]),
)
def test_round_trip_property(name, k, rel, gain, ties):
    info = INFO[name]
    params = []
    if info.uses_rel:
        params.append(f"rel={rel}")
    if gain and "gain" in info.axes:
        params.append(f"gain={gain}")
    if ties and "ties" in info.axes:
        params.append(f"ties={ties}")
    text = name + (f"({','.join(params)})" if params else "") + (f"@{k}" if info.cutoff != "none" else "")
    m = parse(text)
    assert parse(str(m)) == m and str(parse(str(m))) == str(m)


def test_describe_prints_every_parameter():
    full = parse("nDCG@10").describe(Conventions())
    assert full == (
        "nDCG(gain=exponential,discount=log2,ideal=judged,unjudged=zero,ties=average,"
        "precision=double,negative=unjudged,no_relevant=zero)@10"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nDCG@0", "not a positive whole number"),
        ("nDCG@ten", "not a positive whole number"),
        ("nDGC@10", "did you mean 'nDCG'"),
        ("RelP", "needs a cutoff"),
        ("Rprec@10", "takes no cutoff"),
        ("nDCG(rel=2)@10", "no relevance threshold"),
        ("R(gain=linear)@10", "takes no parameter 'gain'"),
        ("nDCG(tie=average)@10", "did you mean 'ties'"),
        ("nDCG(ties=random)@10", "unknown ties 'random'"),
        ("nDCG(gain={0:0,1:1)@10", "unbalanced braces"),
        ("nDCG(gain)@10", "has no value"),
        ("", "cannot parse measure"),
    ],
)
def test_errors(text, message):
    with pytest.raises(MeasureSyntaxError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(text)


def test_duplicates_refused():
    with pytest.raises(MeasureSyntaxError, match="asked for twice"):
        parse_all(["R@10", "recall(rel=1)@10"])


def test_required_depth():
    conv = Conventions()
    assert required_depth(parse_all(["nDCG@10", "R@100", "P@5"]), conv) == 100
    assert required_depth(parse_all(["nDCG@10", "AP"]), conv) is None
    assert required_depth(parse_all(["Rprec"]), conv) is None
    assert required_depth(parse_all(["nDCG(ideal=returned)@10"]), conv) is None
    assert required_depth(parse_all(["nDCG@10"]), conv.with_(unjudged="drop")) is None


def test_trec_eval_rbp_axes_by_hand(tmp_path):
    """Query 1 judges a=3, b=1, c=0; the run returns a, x (unjudged), b. trec_eval 10's rbp (p=0.9, gains
    over the highest grade 3): 0.1 * (1 + 0.9^2 * 1/3) = 0.127; rbp_resid: 0.1 * 0.9 + 0.9^3 = 0.819.
    Query 2 judges d=1 and the run returns d alone: RBP 0.1; the residual 0 under if_unjudged, 0.9^1 under
    always."""
    from qrelkit import evaluate, read_qrels, read_run

    qp = tmp_path / "qrels.txt"
    qp.write_text("1 0 a 3\n1 0 b 1\n1 0 c 0\n2 0 d 1\n")
    rp = tmp_path / "run.txt"
    rp.write_text("1 Q0 a 1 3 t\n1 Q0 x 2 2 t\n1 Q0 b 3 1 t\n2 Q0 d 1 1 t\n")
    qrels, run = read_qrels(qp), read_run(rp)
    res = evaluate(qrels, run, ["rbp", "rbp_resid"], Conventions())
    rbp, resid = (str(m) for m in res.measures)
    assert res.values(rbp) == pytest.approx({"1": 0.127, "2": 0.1}, abs=1e-15)
    assert res.values(resid) == pytest.approx({"1": 0.819, "2": 0.0}, abs=1e-15)
    trec = evaluate(qrels, run, ["RBP", "RBP_resid"], Conventions.from_profile("trec_eval"))
    assert trec.values("RBP") == res.values(rbp) and trec.values("RBP_resid") == res.values(resid)
    always = evaluate(qrels, run, ["RBP_resid(persistence=0.9)"], Conventions()).values(
        "RBP_resid(persistence=0.9)"
    )
    assert always == pytest.approx({"1": 0.819, "2": 0.9}, abs=1e-15)
    binary = evaluate(qrels, run, ["RBP"], Conventions()).values("RBP")  # p = 0.8, a and b worth 1
    assert binary == pytest.approx({"1": 0.2 * (1 + 0.64), "2": 0.2}, abs=1e-15)
