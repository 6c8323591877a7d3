"""Positional-encoding lab: the sinusoidal table (Vaswani et al. 2017, 3.5), its curves and position similarity,
X / PE / X + PE of the typed sentence, and MiniLM's learned positions beside the fixed ones. Builders: viz/positional.py.
"""

import streamlit as st

from model.errors import HeadlightError
from ui.downloads import download_buttons
from ui.state import get_model, sidebar
from viz import positional as vp
from viz.export import heatmap_figure
from viz.heatmap import mpl_plain, pooling_note


@st.cache_data(max_entries=16, show_spinner=False)
def pe_table(n: int, d: int):
    return vp.sinusoidal(n, d)  # (n, d)


@st.cache_data(max_entries=16, show_spinner="Computing the similarity matrix…")
def pe_similarity(n: int, d: int, cosine: bool):
    return vp.similarity(pe_table(n, d), cosine)  # (n, n)


@st.cache_data(max_entries=4, show_spinner=False)
def learned_table(device: str):
    table = get_model("minilm-l6", device).position_table(512)  # (512, 384) learned rows
    return table, vp.similarity(table, cosine=True)


@st.cache_data(max_entries=16, show_spinner=False)
def sentence_parts(name: str, device: str, text: str):
    enc, parts = get_model(name, device).embedding_parts(text)
    return enc.tokens, parts


def export(key, matrix, rows, cols, title, subtitle="", **kw):
    download_buttons(key, lambda: heatmap_figure(matrix, rows, cols, title=title, subtitle=subtitle, **kw),
                     matrix, rows, cols, key)


view = sidebar()
big = view.lecture
st.title("Positional-encoding lab")
st.latex(r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right) \qquad "
         r"PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)")
c1, c2 = st.columns(2)
n = c1.slider("Positions", 1, vp.MAX_POSITIONS, 50, key="pe_n", persist_state="session")
d = c2.slider("d_model", 2, vp.MAX_D_MODEL, 128, step=2, key="pe_d", persist_state="session")
pe = pe_table(n, d)
st.plotly_chart(vp.pe_heatmap(pe, big=big), key="pe_heat")
st.caption(pooling_note(pe.shape, 384) or "Every value lies in [−1, 1]; even columns are sines, odd columns cosines.")
export("pe-table", pe, list(range(n)), list(range(d)), f"Sinusoidal PE · {n} positions × {d} dims",
       cmap="RdBu_r", vmin=-1, vmax=1, xlabel="dimension", ylabel="position")

st.subheader("Dimensions as curves")
dims_ok = [j for j in st.session_state.get("pe_dims", vp.default_dims(d)) if j < d]
st.session_state["pe_dims"] = dims_ok or vp.default_dims(d)
dims = st.multiselect("Dimensions", list(range(d)), key="pe_dims", persist_state="session", help="Low dimensions turn fast, high ones slowly.")
st.plotly_chart(vp.pe_curves(pe, dims, big=big), key="pe_curves")
download_buttons("pe-curves", lambda: vp.curves_figure(pe, dims), pe[:, dims], list(range(n)),
                 [f"dim {j}" for j in dims], "pe-curves")

st.subheader("Position-to-position similarity")
cosine = st.toggle("Cosine similarity (instead of raw dot products)", key="pe_cosine", persist_state="session")
sim = pe_similarity(n, d, cosine)
st.plotly_chart(vp.similarity_heatmap(sim, title=f"PE · PEᵀ ({n} × {n})", cosine=cosine, big=big), key="pe_sim")
st.caption("Nearby positions have similar vectors and the similarity depends only on the distance: "
           "the diagonal bands are the same everywhere. " + (pooling_note(sim.shape, 256) or ""))
export("pe-similarity", sim, list(range(n)), list(range(n)), f"PE similarity ({'cosine' if cosine else 'dot'})",
       xlabel="position", ylabel="position")

st.subheader("Your sentence: X, PE and X + PE")
if view.trace is None:
    st.info("Type a sentence in the sidebar to see its embeddings with positions added.")
else:
    encdec, note = vp.fallback_encoder_decoder(lambda name: get_model(name, view.device))
    tabs = st.tabs(["MiniLM-L6: learned positions", f"{encdec.name}: sinusoidal positions"])
    labels = {"minilm-l6": {"token": "X: word embeddings", "position": "PE: learned position rows",
                            "token_type": "token-type rows", "sum": "X + PE + type (before LayerNorm)"},
              encdec.name: {"token": "X: embedding × √d_model", "position": "PE: sinusoidal",
                            "sum": "X + PE"}}
    for tab, name in zip(tabs, ["minilm-l6", encdec.name]):
        with tab:
            try:
                tokens, parts = sentence_parts(name, view.device, view.text)
            except HeadlightError as exc:
                st.info(str(exc))
                continue
            st.plotly_chart(vp.embedding_triptych(parts, tokens, labels=labels[name], big=big,
                                                  title=f"{name}: {len(tokens)} tokens × {parts['sum'].shape[1]}"),
                            key=f"pe_parts_{name}")
            if name != "minilm-l6" and note:
                st.caption(note)
            download_buttons(f"pe-parts-{name}", lambda p=parts, t=tokens, m=name: vp.triptych_figure(
                p, t, labels=labels[m], title=f"{m}: X, PE, X + PE", subtitle=mpl_plain(view.text)),
                parts["sum"], tokens, None, f"{name}-x-plus-pe")

st.subheader("Learned (MiniLM) versus fixed (sinusoidal) positions")
learned, learned_sim = learned_table(view.device)
fixed = pe_table(512, learned.shape[1])
fixed_sim = pe_similarity(512, learned.shape[1], True)
left, right = st.columns(2)
for col, mat, s, name in ((left, learned, learned_sim, "MiniLM learned"), (right, fixed, fixed_sim, "Sinusoidal")):
    with col:
        st.plotly_chart(vp.pe_heatmap(mat, title=f"{name}: 512 × {mat.shape[1]}", big=big, max_side=256,
                                      lim=vp.robust_limit(mat)), key=f"cmp_{name}")
        st.plotly_chart(vp.similarity_heatmap(s, title=f"{name}: cosine similarity", cosine=True, big=big),
                        key=f"cmp_sim_{name}")
        export(f"cmp-{name}", s, list(range(512)), list(range(512)), f"{name} positions: cosine similarity",
               xlabel="position", ylabel="position")
st.caption("Cosine similarity here, since the two tables have very different scales. The sinusoidal rows are a "
           "fixed formula, with bands that depend only on distance. MiniLM learned its 512 "
           "rows in training: similar neighbours too, but noisier, and it cannot go beyond position 511. "
           + pooling_note((512, 512), 256))
