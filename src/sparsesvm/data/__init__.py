"""The data: sources and downloads of the three datasets, their readers, features, subsets.

- :mod:`~sparsesvm.data.sources`: public URLs and accepted checksums (the one table);
- :mod:`~sparsesvm.data.download`: checksummed downloads from URLs or a mirror;
- :mod:`~sparsesvm.data.leukemia`, :mod:`~sparsesvm.data.mnist`,
  :mod:`~sparsesvm.data.news20`: the readers of the three file formats and the real
  datasets' sizes, returning the containers of :mod:`~sparsesvm.data.containers`;
- :mod:`~sparsesvm.data.features`: the paper's features (raw values,
  wavelet scattering, TF-IDF) and their on-disk format;
- :mod:`~sparsesvm.data.subsets`: the class-balanced training subsets.
"""
