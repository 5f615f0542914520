"""Regenerate dentalkit/data/landmark_map_*.csv (our documented default numbering).

The service does not publish which ``Later_N`` / ``Front_N`` key is which anatomical
point. dentalkit ships this default map (used by the sandbox and the analyses); users
replace it with their own CSV when the provider publishes the real one. Run:

    python tools/make_landmark_maps.py
"""

from __future__ import annotations

import csv
from pathlib import Path

LATERAL_NAMED = [
    # name, group, description
    ("S", "skeletal", "Sella: centre of the sella turcica"),
    ("N", "skeletal", "Nasion: most anterior point of the frontonasal suture"),
    ("Or", "skeletal", "Orbitale: lowest point of the infraorbital margin"),
    ("Po", "skeletal", "Porion: top of the external auditory meatus"),
    ("A", "skeletal", "Point A (subspinale): deepest point of the anterior maxilla"),
    ("B", "skeletal", "Point B (supramentale): deepest point of the anterior symphysis"),
    ("Pog", "skeletal", "Pogonion: most anterior point of the bony chin"),
    ("Me", "skeletal", "Menton: lowest point of the symphysis"),
    ("Gn", "skeletal", "Gnathion: midway between Pog and Me on the symphysis contour"),
    ("Go", "skeletal", "Gonion: most posterior-inferior point of the mandibular angle"),
    ("ANS", "skeletal", "Anterior nasal spine tip"),
    ("PNS", "skeletal", "Posterior nasal spine tip"),
    ("Ar", "skeletal", "Articulare: crossing of cranial-base contour and posterior ramus"),
    ("Co", "skeletal", "Condylion: most posterior-superior point of the condyle"),
    ("Ba", "skeletal", "Basion: anterior margin of the foramen magnum"),
    ("Pt", "skeletal", "Pt point: posterior-superior point of the pterygomaxillary fissure"),
    ("Ptm", "skeletal", "Pterygomaxillary fissure, inferior point"),
    ("Xi", "skeletal", "Xi point: geometric centre of the ramus (Ricketts)"),
    ("Pm", "skeletal", "Protuberance menti (suprapogonion, Ricketts)"),
    ("DC", "skeletal", "Centre of the condyle on the Ba-N line (Ricketts)"),
    ("U1_tip", "dental", "Incisal edge of the most prominent upper central incisor"),
    ("U1_apex", "dental", "Root apex of the upper central incisor"),
    ("U1_labial", "dental", "Most labial point of the upper incisor crown"),
    ("L1_tip", "dental", "Incisal edge of the most prominent lower central incisor"),
    ("L1_apex", "dental", "Root apex of the lower central incisor"),
    ("L1_labial", "dental", "Most labial point of the lower incisor crown"),
    ("U6_cusp", "dental", "Mesiobuccal cusp tip of the upper first molar"),
    ("L6_cusp", "dental", "Mesiobuccal cusp tip of the lower first molar"),
    ("U4_cusp", "dental", "Buccal cusp tip of the upper first premolar"),
    ("L4_cusp", "dental", "Buccal cusp tip of the lower first premolar"),
    ("G'", "soft_tissue", "Soft-tissue glabella"),
    ("N'", "soft_tissue", "Soft-tissue nasion"),
    ("Prn", "soft_tissue", "Pronasale: tip of the nose"),
    ("Cm", "soft_tissue", "Columella point: most anterior point of the columella"),
    ("Sn", "soft_tissue", "Subnasale"),
    ("A'", "soft_tissue", "Soft-tissue point A"),
    ("Ls", "soft_tissue", "Labrale superius"),
    ("Stms", "soft_tissue", "Stomion superius"),
    ("Stmi", "soft_tissue", "Stomion inferius"),
    ("Li", "soft_tissue", "Labrale inferius"),
    ("B'", "soft_tissue", "Soft-tissue point B"),
    ("Pog'", "soft_tissue", "Soft-tissue pogonion"),
    ("Gn'", "soft_tissue", "Soft-tissue gnathion"),
    ("Me'", "soft_tissue", "Soft-tissue menton"),
]
LATERAL_CONTOURS = [
    ("sella_contour", 8, "outline of the sella turcica"),
    ("cranial_base", 6, "anterior cranial base from S towards N"),
    ("orbit_contour", 6, "orbital rim"),
    ("nasal_bone", 4, "nasal bone from N to its tip"),
    ("maxilla_contour", 10, "maxilla and palate outline"),
    ("ptm_fissure", 5, "pterygomaxillary fissure outline"),
    (
        "mandible_contour",
        40,
        "mandible from condyle over ramus, angle and lower border to symphysis",
    ),
    ("upper_incisor_outline", 8, "upper central incisor crown and root"),
    ("lower_incisor_outline", 8, "lower central incisor crown and root"),
    ("upper_molar_outline", 6, "upper first molar crown"),
    ("lower_molar_outline", 6, "lower first molar crown"),
    ("soft_tissue_profile", 18, "soft-tissue profile from forehead to chin"),
]

FRONTAL_NAMED = [
    ("Cg", "skeletal", "Crista galli"),
    ("Or_R", "skeletal", "Orbitale, patient's right"),
    ("Or_L", "skeletal", "Orbitale, patient's left"),
    ("Z_R", "skeletal", "Medial zygomatic-frontal suture point, right"),
    ("Z_L", "skeletal", "Medial zygomatic-frontal suture point, left"),
    ("ZA_R", "skeletal", "Most lateral point of the zygomatic arch, right"),
    ("ZA_L", "skeletal", "Most lateral point of the zygomatic arch, left"),
    ("NC_R", "skeletal", "Widest point of the nasal cavity, right"),
    ("NC_L", "skeletal", "Widest point of the nasal cavity, left"),
    ("ANS", "skeletal", "Anterior nasal spine"),
    ("J_R", "skeletal", "Jugale: key ridge / jugal process point, right"),
    ("J_L", "skeletal", "Jugale: key ridge / jugal process point, left"),
    ("Ag_R", "skeletal", "Antegonial notch, right"),
    ("Ag_L", "skeletal", "Antegonial notch, left"),
    ("Me", "skeletal", "Menton"),
    ("Co_R", "skeletal", "Condylion, right"),
    ("Co_L", "skeletal", "Condylion, left"),
    ("Ma_R", "skeletal", "Mastoid process tip, right"),
    ("Ma_L", "skeletal", "Mastoid process tip, left"),
    ("UDM", "dental", "Upper dental midline (contact of the upper central incisors)"),
    ("LDM", "dental", "Lower dental midline (contact of the lower central incisors)"),
    ("U6_R", "dental", "Buccal surface of the upper first molar, right"),
    ("U6_L", "dental", "Buccal surface of the upper first molar, left"),
    ("L6_R", "dental", "Buccal surface of the lower first molar, right"),
    ("L6_L", "dental", "Buccal surface of the lower first molar, left"),
]
FRONTAL_CONTOURS = [
    ("orbit_contour_R", 10, "orbital rim, right"),
    ("orbit_contour_L", 10, "orbital rim, left"),
    ("nasal_cavity", 12, "nasal cavity outline"),
    ("mandible_contour", 25, "mandible outline from right condyle to left condyle"),
    ("skull_outline", 18, "outer skull outline"),
]
# The soft-tissue face outline carries the SasFront_ prefix in our default map.
FRONTAL_SAS = ("face_outline", 18, "soft-tissue face outline")


def rows(view, prefix, named, contours, sas=None):
    out = []
    i = 0
    for name, group, desc in named:
        i += 1
        out.append((f"{prefix}{i}", view, name, group, desc))
    for cname, n, desc in contours:
        for k in range(1, n + 1):
            i += 1
            out.append(
                (f"{prefix}{i}", view, f"{cname}_{k:02d}", "contour", f"{desc}, point {k} of {n}")
            )
    if sas:
        cname, n, desc = sas
        for k in range(1, n + 1):
            out.append(
                (f"SasFront_{k}", view, f"{cname}_{k:02d}", "contour", f"{desc}, point {k} of {n}")
            )
    return out


def main() -> None:
    data = Path(__file__).resolve().parents[1] / "dentalkit" / "data"
    lat = rows("lateral", "Later_", LATERAL_NAMED, LATERAL_CONTOURS)
    fro = rows("frontal", "Front_", FRONTAL_NAMED, FRONTAL_CONTOURS, FRONTAL_SAS)
    assert len(lat) == 169, len(lat)
    assert len(fro) == 118, len(fro)
    for fname, rs in (("landmark_map_lateral.csv", lat), ("landmark_map_frontal.csv", fro)):
        with open(data / fname, "w", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(["key", "view", "name", "group", "description"])
            w.writerows(rs)


if __name__ == "__main__":
    main()
