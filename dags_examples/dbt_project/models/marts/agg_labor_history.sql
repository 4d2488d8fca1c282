{{ config(meta={'tier': 'historical'}) }}

-- The period labor is summed over: a project var (month), or a request's --vars {"labor_period": "week"}.
select
    project_id,
    date_trunc('{{ var("labor_period") }}', worked_on) as period_start,
    sum(hours) as hours,
    sum(labor_cost) as labor_cost
from {{ ref('fact_project_labor') }}
group by 1, 2
