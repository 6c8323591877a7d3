"""Positional-encoding lab: the sinusoidal table (Vaswani et al. 2017, 3.5), its curves and position similarity,
X / PE / X + PE of the typed sentence, and MiniLM's learned positions beside the fixed ones."""

import streamlit as st

from analysis.positional import MAX_D_MODEL, MAX_POSITIONS
from ui import cache
from ui.labs import pe_export, sentence_parts
from ui.shell import current_view
from ui.widgets import Export, chart
from viz import positional as vp
from viz.heatmap import pooling_note

view = current_view()
st.title("Positional-encoding lab")
st.latex(r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right) \qquad "
         r"PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)")
c1, c2 = st.columns(2)
n = c1.slider("Positions", 1, MAX_POSITIONS, 50, key="pe_n", persist_state="session")
d = c2.slider("d_model", 2, MAX_D_MODEL, 128, step=2, key="pe_d", persist_state="session")
pe = cache.pe_table(n, d)
chart(vp.pe_heatmap(pe, lecture=view.lecture), "pe_heat", pe_export(pe, f"Sinusoidal PE · {n} positions × {d} dims",
                                                               "dimension", cmap="RdBu_r", vmin=-1, vmax=1))
st.caption(pooling_note(pe.shape, 384) or "Every value lies in [−1, 1]; even columns are sines, odd columns cosines.")

st.subheader("Dimensions as curves")
st.session_state["pe_dims"] = [j for j in st.session_state.get("pe_dims", []) if j < d] or vp.default_dims(d)
dims = st.multiselect("Dimensions", list(range(d)), key="pe_dims", persist_state="session",
                      help="Low dimensions turn fast, high ones slowly.")
chart(vp.pe_curves(pe, dims, lecture=view.lecture), "pe_curves", Export(
    pe[:, dims], list(range(n)), [f"dim {j}" for j in dims], filename="pe-curves",
    make_figure=lambda: vp.curves_figure(pe, dims)))

st.subheader("Position-to-position similarity")
cosine = st.toggle("Cosine similarity (instead of raw dot products)", key="pe_cosine", persist_state="session")
sim = cache.pe_similarity(n, d, cosine)
chart(vp.similarity_heatmap(sim, title=f"PE · PEᵀ ({n} × {n})", cosine=cosine, lecture=view.lecture), "pe_sim",
      pe_export(sim, f"PE similarity ({'cosine' if cosine else 'dot'})", "position"))
st.caption("Nearby positions have similar vectors and the similarity depends only on the distance: "
           "the diagonal bands are the same everywhere. " + (pooling_note(sim.shape, 256) or ""))

st.subheader("Your sentence: X, PE and X + PE")
if view.trace is None:
    st.info("Type a sentence in the sidebar to see its embeddings with positions added.")
else:
    sentence_parts(view)

st.subheader("Learned (MiniLM) versus fixed (sinusoidal) positions")
learned, learned_sim = cache.learned_positions(view.device)
for col, mat, s, name in zip(st.columns(2), (learned, cache.pe_table(512, learned.shape[1])),
                             (learned_sim, cache.pe_similarity(512, learned.shape[1], True)),
                             ("MiniLM learned", "Sinusoidal")):
    with col:
        st.plotly_chart(vp.pe_heatmap(mat, title=f"{name}: 512 × {mat.shape[1]}", lecture=view.lecture, max_side=256,
                                      lim=vp.robust_limit(mat)), key=f"cmp_{name}")
        chart(vp.similarity_heatmap(s, title=f"{name}: cosine similarity", cosine=True, lecture=view.lecture),
              f"cmp_sim_{name}", pe_export(s, f"{name} positions: cosine similarity", "position"))
st.caption("Cosine similarity here, since the two tables have very different scales. The sinusoidal rows are a "
           "fixed formula, with bands that depend only on distance. MiniLM learned its 512 rows in training: "
           "similar neighbours too, but noisier, and it cannot go beyond position 511. " + pooling_note((512, 512), 256))
