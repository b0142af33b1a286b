"""The data: downloads and readers of the three datasets, features, training subsets.

- :mod:`~sparsesvm.data.datasets`: downloading with checksums and mirrors, and
  the readers of leukemia, MNIST and 20 Newsgroups;
- :mod:`~sparsesvm.data.features`: the paper's features (raw values,
  wavelet scattering, TF-IDF) and their on-disk format;
- :mod:`~sparsesvm.data.subsets`: the class-balanced training subsets.
"""
