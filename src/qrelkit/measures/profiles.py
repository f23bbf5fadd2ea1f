"""Named profiles: the conventions of widely used evaluation tools, spelled out axis by axis.

A :class:`Profile` is a :class:`~qrelkit.measures.conventions.Conventions` value plus what the tool does to its input
before it computes anything: how it treats a document listed twice for one query (the reader's
``on_duplicate`` option) and the inputs it refuses outright (``refuses``). qrelkit refuses the same inputs,
with its own message, so that a number reported "as trec_eval" is a number trec_eval would have reported.

Every profile names the file and function in the tool's source that fixes each choice, and the cross-check
test that runs the real tool against qrelkit (``tests/crosscheck/test_profiles.py``). ``docs/conventions.md``
holds the same table with the evidence in full.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, get_args

from ..errors import ConventionError, ValidationError, did_you_mean
from .conventions import Conventions

#: What a tool does with a run file that holds no line (:attr:`Profile.empty_run`).
EmptyRun = Literal["refuse", "evaluate"]

#: Inputs a tool refuses, checked before evaluating under its profile.
Refusal = Literal["numeric_query_ids", "grades_at_most_4", "two_returned_per_query"]
REFUSALS: tuple[str, ...] = get_args(Refusal)

#: Inputs on which the tool stops where qrelkit goes on (with the profile's documented result) and warns;
#: ``strict`` turns the warning into an error.
Stop = Literal["missing_from_run", "query_sets_differ"]
STOPS: tuple[str, ...] = get_args(Stop)

_REFUSAL_TEXT = {
    "numeric_query_ids": "whole-number query ids (gdeval.pl reads them as numbers)",
    "grades_at_most_4": "grades of at most 4 (gdeval.pl's $MAX_JUDGMENT)",
    "two_returned_per_query": "at least two returned documents per query (ndcg_score refuses one)",
}


@dataclass(frozen=True)
class Profile:
    """One tool's conventions and input handling.

    ``on_duplicate`` is the reader option that reproduces what the tool does with a document listed twice
    for one query (``error`` where the tool refuses such input); ``comments`` whether it skips TREC lines
    beginning with ``#`` (trec_eval 10 does). ``refuses`` lists further inputs the
    tool rejects. ``evidence`` names where in the tool's source each choice is made; ``crosscheck`` the test
    that compares the tool with qrelkit; ``notes`` what the profile does not reproduce.
    ``empty_run`` is what the tool does with a run file that holds no line: ``refuse`` (qrelkit's default:
    an empty file is more often a broken pipeline than a system that returned nothing) or ``evaluate`` (the
    run returned nothing: every judged query is then missing from it, and ``missing_queries`` decides,
    0 on each under ir_measures, no query scored under pytrec_eval). ``unstable_ties`` names the measure families whose value the tool takes from the order its sort
    (``unstable_sort``) leaves tied scores in, a sort neither stable nor documented: where that order
    matters in a query the results say so (:mod:`qrelkit.engine.tie_order`).
    """

    name: str
    tool: str
    conventions: Conventions
    on_duplicate: str = "error"
    comments: bool = False
    refuses: tuple[Refusal, ...] = ()
    stops: tuple[Stop, ...] = ()
    evidence: tuple[str, ...] = ()
    crosscheck: str = ""
    notes: str = ""
    unstable_ties: tuple[str, ...] = ()
    unstable_sort: str = ""
    empty_run: EmptyRun = "refuse"

    @property
    def optimistic(self) -> list[str]:
        """The axes on which this profile takes a choice that can only raise the score."""
        return optimistic_axes(self.conventions)

    def check(self, qrels: Any, runs: Any) -> None:
        """Refuse the inputs the tool refuses, with qrelkit's message (a :class:`ValidationError`)."""
        run_list = list(runs) if isinstance(runs, list | tuple) else [runs]
        for refusal in self.refuses:
            _CHECKS[refusal](self, qrels, run_list)

    def stop_warnings(self, conv: Conventions, run: str, missing: list[str], extra: list[str]) -> list[str]:
        """What the tool would have done instead of the number qrelkit reports, for one run whose judged
        queries ``missing`` are absent and whose queries ``extra`` have no judgments (empty: nothing)."""
        tool = self.tool.split(" (")[0]
        out = []
        if "missing_from_run" in self.stops and missing and conv.missing_queries == "skip":
            n = len(missing)
            out.append(
                f"run {run!r} lacks {n} judged quer{'y' if n == 1 else 'ies'} (first: {missing[0]!r}): "
                f"{tool} without -c stops there (exit status 4, \"result qid '{missing[0]}' not found in "
                'qrels"); qrelkit left them out of the mean, as trec_eval 9 did (profile trec_eval-c '
                "scores them 0)"
            )
        if "query_sets_differ" in self.stops and (missing or extra):
            out.append(
                f"run {run!r} and the judgments have different query sets ({len(missing)} judged "
                f"missing from the run, {len(extra)} without judgments): {tool} refuses them unless "
                "make_comparable=True, which this profile reproduces"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "tool": self.tool,
            "conventions": self.conventions.to_dict(),
            "on_duplicate": self.on_duplicate,
            "comments": self.comments,
            "refuses": list(self.refuses),
            "stops": list(self.stops),
            "evidence": list(self.evidence),
            "crosscheck": self.crosscheck,
            "notes": self.notes,
            "unstable_ties": list(self.unstable_ties),
            "empty_run": self.empty_run,
        }


#: The profiles whose tool reads a set measure with a cutoff, ``SetP(rel=2)@5``, as the measure over the top k
#: (ranx's ``precision@5``: ``P(rel=2)@5``); elsewhere ``SetP@k`` is refused with a fix naming ``P@k``.
SET_AT_CUTOFF_AS_TOP_K: tuple[str, ...] = ("ranx", "ranx-burges")


def optimistic_axes(conv: Conventions) -> list[str]:
    """Axes set to a value that can only push a score up (the chapter's optimistic variants)."""
    out = []
    if conv.ideal == "returned":
        out.append("ideal=returned")
    if conv.unjudged == "drop":
        out.append("unjudged=drop")
    if conv.ties == "optimistic":
        out.append("ties=optimistic")
    if conv.ap_denominator == "retrieved":
        out.append("ap_denominator=retrieved")
    return out


def _fail(profile: Profile, problem: str, source: str, line: int | None, refusal: str) -> None:
    tool = profile.tool.split(" (")[0]
    raise ValidationError(
        f"{problem}: profile {profile.name!r} refuses it, as {tool} does",
        source=source,
        line=line,
        expected=_REFUSAL_TEXT[refusal],
        fix="correct the input, or evaluate under another profile or explicit conventions",
    )


def _check_numeric_ids(profile: Profile, qrels: Any, runs: list[Any]) -> None:
    import polars as pl

    pattern = re.compile(r"[0-9]+")
    for what, frame, meta, name in [("qrels", qrels.frame, qrels.meta, qrels.name)] + [
        ("run", r.frame, r.meta, r.name) for r in runs
    ]:
        ids = frame.get_column("query_id")
        bad = ~ids.map_elements(lambda q: bool(pattern.fullmatch(q)), return_dtype=pl.Boolean)
        if bad.any():
            row = frame.filter(bad).row(0, named=True)
            _fail(
                profile,
                f"{what} query id {row['query_id']!r} is not a whole number",
                str(meta.get("source", name)),
                row.get("line"),
                "numeric_query_ids",
            )


def _check_max_grade(profile: Profile, qrels: Any, runs: list[Any]) -> None:
    frame = qrels.frame
    bad = frame.get_column("grade") > 4
    if bad.any():
        row = frame.filter(bad).row(0, named=True)
        _fail(
            profile,
            f"grade {row['grade']} is above 4",
            str(qrels.meta.get("source", qrels.name)),
            row.get("line"),
            "grades_at_most_4",
        )


def _check_two_returned(profile: Profile, qrels: Any, runs: list[Any]) -> None:
    judged = set(qrels.frame.get_column("query_id").unique().to_list())
    for run in runs:
        counts = run.frame.group_by("query_id").len()
        for qid, n in counts.iter_rows():
            if n < 2 and qid in judged:
                _fail(
                    profile,
                    f"run {run.name!r} returns {n} document for query {qid!r}",
                    str(run.meta.get("source", run.name)),
                    None,
                    "two_returned_per_query",
                )


_CHECKS = {
    "numeric_query_ids": _check_numeric_ids,
    "grades_at_most_4": _check_max_grade,
    "two_returned_per_query": _check_two_returned,
}

_TEST = "tests/crosscheck/test_profiles.py"


def _profiles() -> list[Profile]:
    trec_evidence = (
        "m_ndcg_cut.c te_calc_ndcg_cut: gain = rel level (linear), ideal from all rel_levels > 0 cut at k",
        "form_res_rels.c comp_sim_docno: sim descending, then strcmp(docno2, docno1) (docno descending)",
        "form_res_rels.c: 'duplicate docs' aborts; negative rel levels are pool-only (not relevant, not "
        "in the ideal)",
        "trec_eval.c (10.0): a qrels query without results stops the evaluation unless -c (exit 4, "
        '"result qid ... not found in qrels"); run queries without judgments are ignored',
    )
    rbp10 = (
        "m_rbp.c (10.0): p = 0.9; gains are the grades 0 .. highest, scaled by their range when one lies "
        "outside 0..1 (rbp_gain=scaled); -l is not read",
        "m_rbp_resid.c (10.0): the value is set only if (unj_so_far), 0 where all is judged "
        "(rbp_residual=if_unjudged)",
        "m_iprec_at_recall.c line 71, m_11pt_avg.c line 81 (10.0): cutoffs[i] = lround(cutoff_percents[i] * "
        "rr.num_rel) (iprec_cutoff=round)",
    )
    truncate9 = (
        "m_iprec_at_recall.c line 65, m_11pt_avg.c line 74 (9.0.5): cutoffs[i] = (long) (cutoff_percents[i] "
        "* rr.num_rel+0.9) (iprec_cutoff=truncate); no m_rbp.c"
    )
    return [
        Profile(
            "trec_eval",
            "trec_eval 10 (usnistgov/trec_eval, without -c)",
            Conventions.from_profile("trec_eval"),
            comments=True,
            stops=("missing_from_run",),
            evidence=(*trec_evidence, *rbp10),
            crosscheck=f"{_TEST}::test_trec_eval_suite_outputs, ::test_pytrec_eval_without_float32_ties, "
            "tests/crosscheck/test_trec_measures_grammar.py",
            notes="trec_eval 10 compares scores in double precision; it stops on a judged query the run "
            "lacks, where this profile leaves the query out of the mean (as trec_eval 9 did) and warns.",
        ),
        Profile(
            "trec_eval-c",
            "trec_eval 10 -c",
            Conventions.from_profile("trec_eval-c"),
            comments=True,
            evidence=(
                *trec_evidence,
                *rbp10,
                "trec_eval.c -c: average over every qrels query, missing ones as 0",
            ),
            crosscheck=f"{_TEST}::test_trec_eval_suite_outputs, ::test_trec_eval_c_mean",
        ),
        Profile(
            "trec_eval-J",
            "trec_eval 10 -J",
            Conventions.from_profile("trec_eval-J"),
            comments=True,
            stops=("missing_from_run",),
            evidence=(
                *trec_evidence,
                *rbp10,
                "form_res_rels.c with judged_docs_only_flag: unjudged and negative-grade documents are "
                "removed before ranking",
            ),
            crosscheck=f"{_TEST}::test_pytrec_eval_judged_only",
        ),
        Profile(
            "trec_eval9",
            "trec_eval 9.0.x",
            Conventions.from_profile("trec_eval9"),
            evidence=(
                *trec_evidence[:-1],
                "trec_eval.c (9.0.x): only queries present in both files are averaged unless -c",
                "trec_format.h TEXT_RESULTS: float sim (scores held in 32 bits)",
                truncate9,
            ),
            crosscheck=f"{_TEST}::test_pytrec_eval_profiles, "
            "tests/crosscheck/test_profile_parity.py::test_pytrec_eval_interpolated_precision_truncates",
        ),
        Profile(
            "pytrec_eval",
            "pytrec_eval (pytrec-eval-terrier, bundles trec_eval 9)",
            Conventions.from_profile("pytrec_eval"),
            evidence=(
                *trec_evidence[:-1],
                "pytrec_eval.cpp RelevanceEvaluator.evaluate: returns only queries in both the qrels "
                "and the run; scores stored as float",
                "pytrec_eval/__init__.py parse_run: asserts on a duplicate docid",
                truncate9,
                "pytrec_eval.cpp RelevanceEvaluator.evaluate({}): {} (an empty run: no query scored)",
            ),
            empty_run="evaluate",
            crosscheck=f"{_TEST}::test_pytrec_eval_profiles, "
            "tests/crosscheck/test_profile_parity.py::test_pytrec_eval_interpolated_precision_truncates",
            notes="pytrec_eval returns no mean; the profile's mean is the mean of its per-query values.",
        ),
        Profile(
            "ir_measures",
            "ir_measures (its pytrec_eval, msmarco, judged, compat and gdeval providers)",
            Conventions.from_profile("ir_measures"),
            empty_run="evaluate",
            on_duplicate="last",
            evidence=(
                "providers/pytrec_eval_provider.py: P, R, AP, RR, Rprec, NumRel, NumRet, NumRelRet, nDCG "
                "and IPrec computed by pytrec_eval (trec_eval 9)",
                truncate9,
                "providers/msmarco_provider.py: RR@k sorted by (-score, docid), double precision",
                "providers/judged_provider.py: Judged@k sorted by (-score, docid), every qrels entry "
                "(negative grades too) judged, divided by min(k, run length)",
                "providers/base.py Evaluator.iter_calc: measure.DEFAULT (0) for every judged query the "
                "run lacks, an empty run's every judged query included",
                "providers/base.py Evaluator.iter_calc: every qrels query missing from the results "
                "gets measure.DEFAULT (0 for every measure, NumRel too) and counts in the mean",
                "aggregate of NumRel, NumRet and NumRelRet: their sum",
                "util.py RunConverter.as_dict_of_dict: a duplicate docid overwrites (last line wins)",
                "providers/compat_provider.py compatibility: ranking.sort() then by score descending "
                "(equal scores by docid ascending), scores as Python floats (double)",
                "providers/gdeval_provider.py: ERR@k and nDCG(dcg='exp-log2')@k by running gdeval.pl, "
                'whose printf "%.5f" per topic is read back with float() (printed_decimals=5)',
                "measures/base.py MeanAgg: self.sum += value in the order iter_calc yields, gdeval.pl's "
                "topics by number (summation=numeric_order)",
            ),
            crosscheck=f"{_TEST}::test_ir_measures_profile, "
            "tests/crosscheck/test_profile_parity.py::test_ir_measures_every_measure, "
            "tests/crosscheck/test_profile_parity.py::test_ir_measures_through_gdeval_to_the_bit",
        ),
        Profile(
            "ranx",
            "ranx ndcg (make_comparable=True)",
            Conventions.from_profile("ranx"),
            on_duplicate="last",
            stops=("query_sets_differ",),
            evidence=(
                "metrics/ndcg.py _dcg (jarvelin=True): gain = grade; _idcg = _dcg(qrels, qrels): ideal "
                "from the judged documents (sorted by grade when the Qrels are built)",
                "metrics/common.py clean_qrels: grades below the relevance level are dropped (gain 0; "
                "at rel=0 a negative grade is not relevant)",
                "metrics/ndcg.py _ndcg: idcg == 0 becomes 1 (the query scores 0)",
                "data_structures/common.py sort_dict_by_value: numba argsort of -score; equal scores "
                "keep file order only while the sort stays stable (short lists)",
                "meta/evaluate.py make_comparable: missing run queries get empty results (0), queries "
                "without judgments are removed",
                "data_structures/run.py from_file: run[q_id][doc_id] = score (last line wins)",
            ),
            crosscheck=f"{_TEST}::test_ranx_profiles",
            notes="ranx's tie order is not guaranteed for long lists, so the cross-check uses inputs "
            "without tied scores; ranx refuses differing query sets unless make_comparable=True, which "
            "this profile reproduces.",
        ),
        Profile(
            "ranx-burges",
            "ranx ndcg_burges (make_comparable=True)",
            Conventions.from_profile("ranx-burges"),
            on_duplicate="last",
            stops=("query_sets_differ",),
            evidence=("metrics/ndcg.py _dcg (jarvelin=False): gain = 2^grade - 1; otherwise as ranx",),
            crosscheck=f"{_TEST}::test_ranx_profiles",
            notes="as ranx",
        ),
        Profile(
            "sklearn",
            "scikit-learn metrics.ndcg_score (one row per query)",
            Conventions.from_profile("sklearn"),
            refuses=("two_returned_per_query",),
            evidence=(
                "metrics/_ranking.py _dcg_sample_scores: gain = y_true (linear)",
                "metrics/_ranking.py _ndcg_sample_scores: ideal = DCG of y_true sorted, i.e. of the "
                "documents passed in (fed a run: the returned documents only)",
                "metrics/_ranking.py _tie_average_dcg: ties averaged (McSherry & Najork 2008)",
                "metrics/_ranking.py ndcg_score: refuses negative y_true and a single document per row",
            ),
            crosscheck=f"{_TEST}::test_sklearn_profile",
            notes="one row per query in both the qrels and the run, unjudged documents given grade 0; "
            "qrelkit refuses any negative grade in the qrels, ndcg_score only those it is passed.",
        ),
        Profile(
            "torchmetrics",
            "torchmetrics retrieval metrics (one query index per query, the returned documents)",
            Conventions.from_profile("torchmetrics"),
            evidence=(
                "functional/retrieval/ndcg.py _dcg_sample_scores: gain = target (linear, negative "
                "targets are negative gains), ideal = DCG of target sorted (the documents passed in)",
                "functional/retrieval/ndcg.py _tie_average_dcg: ties averaged",
                "utilities/checks.py _check_retrieval_target_and_prediction_types: preds cast to float32; "
                "every class but RetrievalNormalizedDCG takes binary targets only (grade >= rel)",
                "functional/retrieval/ndcg.py: normalized_gain == 0 scores 0",
                "retrieval/base.py RetrievalMetric.compute: a query without a positive target scores "
                "empty_target_action, 'neg' (0) by default, and counts in the mean",
                "functional/retrieval/recall.py, r_precision.py: divided by target.sum(), the relevant "
                "documents passed in (ideal=returned)",
                "functional/retrieval/recall.py, precision.py, average_precision.py, reciprocal_rank.py: "
                "torch.where(preds > 0, target, 0): a document scored <= 0 is not retrieved",
                "functional/retrieval/average_precision.py: positions.mean(), the mean precision over "
                "the relevant documents found within top_k (ap_denominator=retrieved)",
                "functional/retrieval/precision.py: divided by top_k; adaptive_k=True: min(top_k, "
                "documents) (cutoff_denominator=returned)",
                "functional/retrieval/hit_rate.py: Success@k; fall_out.py: 1 - target over the documents "
                "passed in; retrieval/fall_out.py: empty_target_action 'pos' (1) by default",
            ),
            crosscheck="tests/crosscheck/test_torchmetrics_parity.py (pytest -m torch), "
            f"{_TEST}::test_torchmetrics_profile",
            notes="torchmetrics accumulates in float32: agreement to 1e-6 (checked with 1.9.0). Every "
            "class but nDCG orders equal scores as torch.argsort or topk leave them (unstable, "
            "undocumented); this profile averages them, and the results warn, per measure, naming the "
            "queries where that order can change torchmetrics' value. RetrievalNormalizedDCG scores a "
            "query whose targets sum to 0 (2, -1, -1) as empty, retrieval_normalized_dcg does not: the "
            "profile follows the function. RetrievalAUROC has no qrelkit measure. A later revision of "
            "ndcg.py ranks every document with a score <= 0 as one tied block at the bottom; this "
            "profile follows 1.9.0.",
            unstable_ties=("R", "P", "AP", "RR", "Rprec", "Success", "FallOut"),
            unstable_sort="torch.argsort or topk",
        ),
        Profile(
            "trectools",
            "trectools TrecEval.get_ndcg (trec_eval=True)",
            Conventions.from_profile("trectools"),
            empty_run="evaluate",
            evidence=(
                "trec_run.py read_run: sort_values(['query', 'score', 'docid'], ascending=[True, "
                "False, True]) (docid ascending); a duplicate docid raises ValueError",
                "trec_qrel.py read_qrel: rows with rel < 0 removed (unjudged)",
                "trec_eval.py get_ndcg: gain = rel (trec_eval=True), ideal from qrels with rel > 0; "
                "dcg_per_query / idcg_per_query is NaN where no relevant document is in the top k",
                "trec_eval.py get_ndcg: mean = ndcg_per_query.sum() / len(run.topics())",
                "trec_run.py TrecRun on an empty file: no topic, every mean NaN",
                "trec_eval.py get_precision, get_recall, get_map, get_reciprocal_rank, get_rprec: "
                "sort_values(..., ascending=[True, False, False]) (docid descending); recall and map "
                "NaN only where nothing is relevant, reciprocal rank also where none was found",
            ),
            crosscheck=f"{_TEST}::test_trectools_profile",
            notes="pandas reads numeric-looking docids as numbers, so '007' and '7' become one "
            "document in trectools; qrelkit keeps ids as text. get_rprec under pandas 3 joins the "
            "judgments by document id alone and is not reproduced.",
        ),
        Profile(
            "gdeval",
            "gdeval.pl (TREC Web track, version 1.2a as bundled with ir_measures)",
            Conventions.from_profile("gdeval"),
            refuses=("numeric_query_ids", "grades_at_most_4"),
            empty_run="evaluate",
            evidence=(
                "gdeval.pl sub dcg: (2**gain - 1) / log(i + 2) (natural log; cancels in nDCG)",
                "gdeval.pl on an empty run: the header line alone, no topic, exit 0",
                "gdeval.pl sub runOrder: score descending, then docno descending",
                "gdeval.pl qrels loop: only judgments > 0 kept; topics without one are not reported",
                "gdeval.pl format checks: numeric topics, judgments <= $MAX_JUDGMENT (4)",
                "gdeval.pl: a duplicate line counts twice (qrelkit refuses duplicates instead)",
                'gdeval.pl topicDone: printf "%.5f" per topic (printed_decimals=5)',
            ),
            crosscheck=f"{_TEST}::test_gdeval_profile",
            notes="gdeval prints 5 decimals, which the profile reproduces to the bit; it strips a topic prefix up to "
            "the last '-' ('wt-12' is topic 12), qrelkit refuses such ids.",
        ),
        Profile(
            "cwl_eval",
            "cwl_eval 1.0.12 (cwl-eval on the package index; Azzopardi, Thomas & Moffat 2019)",
            Conventions.from_profile("cwl_eval"),
            evidence=(
                "cwl_eval.py main: each topic's documents in the result file's order (rank and score unread)",
                "cwl_eval.py main: only the result file's topics are measured",
                "seeker/trec_qrel_handler.py validate_gains: a gain above --max_gain (1.0) or below --min_gain "
                "(0.0) is refused (max_grade=1: the grade is the gain; max_grade=m: grade / m)",
                "ruler/ranking.py get_gain_vector: unjudged documents (NaN) are worth min_gain 0; the ranking "
                "cut or padded to --max_depth 1000",
                "ruler/measures/cwl_metrics.py w_vector and _do_score: W from cumprod of C, np.dot(W, gains)",
                "cwl_precision.py, cwl_rr.py, cwl_ap.py, cwl_rbp.py (theta=0.9): P@k, RR, AP and RBP as C/W/L "
                "continuation vectors over graded gains",
                "cwl_eval.py main on an empty result file: get_ranking of no ranking maker, AttributeError",
            ),
            crosscheck="tests/crosscheck/test_cwl_eval.py::test_cwl_eval_profile_equals_cwl_eval_to_the_bit",
            notes="cwl_eval ranks by file order, qrelkit by score with ties in file order: the two agree on a "
            "run written by score descending, as TREC runs are. cwl_eval also measures a query that has no "
            "judgment (every value 0); qrelkit leaves such a query out. A document listed twice counts twice "
            "in cwl_eval; qrelkit refuses it. Its residuals (best-case gains) and cost files are not read.",
        ),
    ]


PROFILES: dict[str, Profile] = {p.name: p for p in _profiles()}
"""Every profile, in the order of :data:`qrelkit.measures.conventions.PROFILE_AXES` (a test holds them equal)."""


def tool_of(conventions: Conventions) -> Profile | None:
    """The :class:`Profile` ``conventions`` start from (its reader options, refusals, stop warnings and
    unstable tie orders), or ``None``: the one place a profile's name held by conventions is resolved (the
    name was checked when the conventions were made; :func:`get_profile` resolves a name given by a user)."""
    return None if conventions.profile is None else PROFILES[conventions.profile]


def reader_rules(
    profile: Profile | None, on_duplicate: str | None = None, comments: bool | None = None
) -> tuple[str, bool]:
    """The reader's two rules under ``profile``: each one given wins, else the profile's (trec_eval skips
    lines beginning with ``#``; a tool that keeps the last line of a document given twice keeps it), else
    the default (a document given twice is an error; no line is a comment). The one rule
    :meth:`qrelkit.evaluation.plan.ReaderOptions.resolved` and ``read_qrels(profile=)`` apply."""
    from .._typing import DEFAULT_COMMENTS, DEFAULT_ON_DUPLICATE

    if on_duplicate is None:
        on_duplicate = profile.on_duplicate if profile is not None else DEFAULT_ON_DUPLICATE
    if comments is None:
        comments = profile.comments if profile is not None else DEFAULT_COMMENTS
    return on_duplicate, bool(comments)


def conventions_of(profile: str | None, conventions: Conventions | None) -> Conventions | None:
    """``profile=``'s conventions at an API door (``evaluate``, ``evaluate_files``), as ``--profile`` takes
    them; ``conventions`` when no profile is named; both named is an error (the profile already is a set of
    conventions: ``Conventions.from_profile(name).with_(...)`` changes one axis of it)."""
    if profile is None:
        return conventions
    if conventions is not None:
        raise ConventionError(
            f"both profile={profile!r} and conventions= were given",
            fix=f"pass one: profile={profile!r}, or conventions=Conventions.from_profile({profile!r}).with_(...) "
            "to change an axis of it",
        )
    return get_profile(profile).conventions


def get_profile(name: str) -> Profile:
    """The named profile; an unknown name is an error that lists the profiles."""
    if name not in PROFILES:
        raise ConventionError(
            f"unknown profile {name!r}{did_you_mean(name, PROFILES)}",
            expected="one of " + ", ".join(PROFILES),
        )
    return PROFILES[name]
