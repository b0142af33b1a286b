# The job table of the cross-validation jobs (workflow/rules/cv.smk), apart from the rules
# (an experiment's optional `cv: {folds: k}`; none without it).


#: the folds and the validation errors (experiments/cv.py, counted as report code in
#: common.smk so that it does not rerun the ordinary training jobs): CV jobs rerun with it
CV_CODE = _hash_files([PACKAGE_DIR / "experiments" / "cv.py"])


def cv_folds(exp_id):
    cv = experiment(exp_id).get("cv")
    return 0 if cv is None else int(cv["folds"])


CV_PATTERN = f"{RESULTS}/{{dataset}}/cv/{{experiment}}/{{method}}/{{penalty}}/alpha~{{alpha}}/L~{{L}}/subset~{{subset}}/fold~{{fold}}.json"


def cv_files(exp_id):
    """CV job records of an experiment (none without `cv`)."""
    return [CV_PATTERN.format(fold=k, **job) for job in train_jobs(exp_id) for k in range(cv_folds(exp_id))]


def cv_tables(exp_id):
    dataset = experiment(exp_id)["dataset"]
    return [f"{RESULTS}/{dataset}/tables/{exp_id}_{name}.csv" for name in ("cv_runs", "cv_alpha", "cv_summary")]
