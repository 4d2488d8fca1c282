{{ config(meta={'tier': 'historical'}) }}

select
    project_id,
    date_trunc('month', worked_on) as month,
    sum(hours) as hours,
    sum(labor_cost) as labor_cost
from {{ ref('fact_project_labor') }}
group by 1, 2
